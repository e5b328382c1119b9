import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { generatedClientTypes } from '../scripts/generated-types.js';

const repo = new URL('../../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, repo), 'utf8');

test('the client’s generated types are those of the committed schemas (run `npm run print-schema` when this fails)', async () => {
  const files = await generatedClientTypes(read('schema/openapi.json'), read('schema/schema.graphql'));
  expect(files.map((file) => file.path).sort()).toEqual([
    'src/generated/graphql-env.ts',
    'src/generated/openapi.ts',
    'src/generated/paid-operations.ts',
  ]);
  for (const file of files) expect(read(`clients/typescript/${file.path}`), file.path).toBe(file.text);
});

test('the paid operations are read from the schemas: each paid write, REST and GraphQL', async () => {
  const { PAID_REST, PAID_MUTATIONS } = await import('../src/generated/paid-operations.js');
  expect([...PAID_MUTATIONS].sort()).toEqual(['createPost', 'repost', 'send', 'swapToUsdc']);
  // POST /reports is not paid but takes an Idempotency-Key as the paid writes do: the client keys it too.
  expect(PAID_REST.map(({ method, path }) => `${method} ${path}`).sort()).toEqual([
    'POST /api/v1/posts',
    'POST /api/v1/posts/{id}/repost',
    'POST /api/v1/reports',
    'POST /api/v1/send',
    'POST /api/v1/swap-to-usdc',
  ]);
});
