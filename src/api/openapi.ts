import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import type { ApiDeps } from '../app/api-deps.js';
import { buildServer } from './server.js';

/**
 * The OpenAPI document of /api/v1, generated from the route schemas (committed as
 * schema/openapi.json; test/openapi.test.ts fails when it is stale). GET /api/v1/openapi.json
 * serves the same document (both are app.swagger(), finished by openapi-document.ts).
 */
export async function openApiDocument(): Promise<unknown> {
  const app = await serverWithoutServices();
  await app.ready();
  const document = app.swagger();
  await app.close();
  return document;
}

/**
 * The API server with dependencies that refuse to be used: building the routes needs no backing
 * service, and neither does serving the document.
 */
export async function serverWithoutServices(): Promise<FastifyInstance> {
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
  return buildServer(unavailable, { queueBoard: false });
}

export async function printOpenApi(): Promise<string> {
  return `${JSON.stringify(await openApiDocument(), null, 2)}\n`;
}
