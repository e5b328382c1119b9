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
  const document = app.swagger();
  await app.close();
  return document;
}

export async function printOpenApi(): Promise<string> {
  return `${JSON.stringify(await openApiDocument(), null, 2)}\n`;
}
