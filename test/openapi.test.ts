import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { printOpenApi, serverWithoutServices } from '../src/api/openapi.js';

test('schema/openapi.json is the document the route schemas produce (run `npm run print-schema` when this fails)', async () => {
  const committed = readFileSync(new URL('../schema/openapi.json', import.meta.url), 'utf8');
  expect(committed).toBe(await printOpenApi());
});

test('the document names every /api/v1 route with its errors', async () => {
  const document = JSON.parse(await printOpenApi()) as {
    paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
  };
  expect(Object.keys(document.paths).sort()).toEqual([
    '/api/v1/accounts',
    '/api/v1/events',
    '/api/v1/events/stream',
    '/api/v1/feed',
    '/api/v1/finance/periods',
    '/api/v1/finance/periods/{period}',
    '/api/v1/finance/periods/{period}/close',
    '/api/v1/finance/periods/{period}/reopen',
    '/api/v1/finance/reconciliation',
    '/api/v1/me',
    '/api/v1/me/audience',
    '/api/v1/me/earnings',
    '/api/v1/me/posts/earnings',
    '/api/v1/me/profile',
    '/api/v1/me/transactions',
    '/api/v1/payments/{swap_tx}',
    '/api/v1/posts',
    '/api/v1/posts/{id}',
    '/api/v1/posts/{id}/like',
    '/api/v1/posts/{id}/repost',
    '/api/v1/reports',
    '/api/v1/reports/{id}',
    '/api/v1/reports/{id}/file',
    '/api/v1/reports/{id}/file-link',
    '/api/v1/send',
    '/api/v1/swap-quote',
    '/api/v1/swap-to-usdc',
    '/api/v1/users/{handle}',
    '/api/v1/users/{handle}/follow',
    '/api/v1/users/{handle}/posts',
    '/api/v1/webhooks',
    '/api/v1/webhooks/{id}',
    '/api/v1/webhooks/{id}/deliveries',
    '/api/v1/webhooks/{id}/enable',
    '/api/v1/webhooks/{id}/replay',
    '/api/v1/webhooks/{id}/rotate-secret',
  ]);
  expect(Object.keys(document.paths['/api/v1/me']!.get!.responses).sort()).toEqual([
    '200',
    '401',
    '403',
    '429',
  ]);
});

interface Operation {
  operationId?: string;
  requestBody?: { content: Record<string, { example?: unknown; examples?: Record<string, unknown> }> };
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}

async function operations(): Promise<Array<[string, Operation]>> {
  const document = JSON.parse(await printOpenApi()) as { paths: Record<string, Record<string, Operation>> };
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(
      ([method, operation]) => [`${method.toUpperCase()} ${path}`, operation] as const,
    ),
  ) as Array<[string, Operation]>;
}

test('every operation has a unique camelCase operationId (names of generated client methods)', async () => {
  const ids = (await operations()).map(([name, operation]) => [name, operation.operationId] as const);
  for (const [name, id] of ids) expect(id, name).toMatch(/^[a-z][a-zA-Z0-9]*$/);
  expect(new Set(ids.map(([, id]) => id)).size).toBe(ids.length);
});

test('every 4xx and 5xx response is the shared Error schema, by reference', async () => {
  const document = JSON.parse(await printOpenApi()) as {
    components: { schemas: Record<string, { required?: string[] }> };
  };
  expect(document.components.schemas.Error?.required).toEqual(['error', 'message']);
  for (const [name, operation] of await operations()) {
    for (const [status, response] of Object.entries(operation.responses)) {
      if (Number(status) < 400) continue;
      expect(Object.values(response.content ?? {}), `${name} ${status}`).toEqual([
        { schema: { $ref: '#/components/schemas/Error' } },
      ]);
    }
  }
});

test('the document names its server and gives an example of every JSON request body', async () => {
  const document = JSON.parse(await printOpenApi()) as { servers?: Array<{ url: string }> };
  expect(document.servers).toEqual([expect.objectContaining({ url: 'http://localhost:3000' })]);
  for (const [name, operation] of await operations()) {
    const json = operation.requestBody?.content['application/json'];
    if (json) expect(json.example ?? json.examples, name).toBeDefined();
  }
});

test('the paid writes document the optional Idempotency-Key header', async () => {
  const paid = (await operations()).filter(([name]) =>
    [
      'POST /api/v1/posts',
      'POST /api/v1/posts/{id}/repost',
      'POST /api/v1/send',
      'POST /api/v1/swap-to-usdc',
    ].includes(name),
  );
  expect(paid).toHaveLength(4);
  for (const [name, operation] of paid) {
    expect((operation as { parameters?: unknown[] }).parameters, name).toContainEqual(
      expect.objectContaining({ in: 'header', name: 'Idempotency-Key', required: false }),
    );
  }
});

test('GET /api/v1/openapi.json serves the committed document', async () => {
  const app = await serverWithoutServices();
  try {
    const answer = await app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    expect(answer.statusCode).toBe(200);
    const committed = readFileSync(new URL('../schema/openapi.json', import.meta.url), 'utf8');
    expect(answer.json()).toEqual(JSON.parse(committed));
  } finally {
    await app.close();
  }
});
