import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { printGraphqlSchema } from '../src/api/graphql/graphql-schema.js';

test('schema/schema.graphql is the schema Pothos builds (run `npm run print-schema` when this fails)', () => {
  const committed = readFileSync(new URL('../schema/schema.graphql', import.meta.url), 'utf8');
  expect(committed).toBe(printGraphqlSchema());
});
