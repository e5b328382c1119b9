import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { printOpenApi } from '../src/api/openapi.js';

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
    '/api/v1/finance/reconciliation',
    '/api/v1/me',
    '/api/v1/me/profile',
    '/api/v1/me/transactions',
    '/api/v1/payments/{swap_tx}',
    '/api/v1/posts',
    '/api/v1/posts/{id}',
    '/api/v1/posts/{id}/like',
    '/api/v1/posts/{id}/repost',
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
