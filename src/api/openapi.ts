import pino from 'pino';
import type { ApiDeps } from '../app/api-deps.js';
import { buildServer } from './server.js';

/**
 * The OpenAPI document of /api/v1, generated from the route schemas (committed as
 * schema/openapi.json; test/openapi.test.ts fails when it is stale). Building the routes needs no
 * backing service, so the dependencies here refuse to be used.
 */
export async function openApiDocument(): Promise<unknown> {
  const unavailable = new Proxy(
    {},
    {
      get: (_target, name) => {
        if (name === 'logger') return pino({ level: 'silent' });
        if (name === 'trustProxyHops') return 0;
        if (name === 'exposure') return { corsOrigins: [], metricsToken: undefined, graphiql: false };
        throw new Error(`${String(name)} is not available while printing the OpenAPI document`);
      },
    },
  ) as ApiDeps;
  const app = await buildServer(unavailable, { queueBoard: false });
  await app.ready();
  const document = app.swagger() as OpenApiDocument;
  await app.close();
  markOptionalBodies(document);
  return document;
}

interface OpenApiDocument {
  paths?: Record<string, Record<string, { requestBody?: OpenApiBody }>>;
}

interface OpenApiBody {
  required?: boolean;
  content?: Record<string, { schema?: { type?: string | string[] } }>;
}

/**
 * @fastify/swagger marks every request body required. A route whose body schema admits null also
 * takes no body at all (POST /webhooks/{id}/replay: none means from the start): its body is
 * marked optional, so a generated client does not force its callers to send one.
 */
function markOptionalBodies(document: OpenApiDocument): void {
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      const body = operation.requestBody;
      if (!body?.content) continue;
      const schemas = Object.values(body.content).map((media) => media.schema);
      const admitsNull = (type: string | string[] | undefined) =>
        Array.isArray(type) ? type.includes('null') : type === 'null';
      if (schemas.every((schema) => admitsNull(schema?.type))) body.required = false;
    }
  }
}

export async function printOpenApi(): Promise<string> {
  return `${JSON.stringify(await openApiDocument(), null, 2)}\n`;
}
