import { expect } from 'vitest';

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const BASE58_SIGNATURE = /^[1-9A-HJ-NP-Za-km-z]{64,88}$/;

export type JsonType =
  'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array' | 'null' | 'iso8601' | 'signature';

/** Exactly these fields, each of its JSON type (a list allows several, e.g. string or null). */
export function expectShape(value: unknown, shape: Record<string, JsonType | readonly JsonType[]>): void {
  expect(value).toBeTypeOf('object');
  const record = value as Record<string, unknown>;
  expect(Object.keys(record).sort()).toEqual(Object.keys(shape).sort());
  for (const [field, expected] of Object.entries(shape)) {
    const types = Array.isArray(expected) ? expected : [expected];
    const actual = record[field];
    const matches = types.some((type) => {
      switch (type) {
        case 'null':
          return actual === null;
        case 'integer':
          return Number.isSafeInteger(actual);
        case 'array':
          return Array.isArray(actual);
        case 'object':
          return typeof actual === 'object' && actual !== null && !Array.isArray(actual);
        case 'iso8601':
          return typeof actual === 'string' && ISO_8601.test(actual);
        case 'signature':
          return typeof actual === 'string' && BASE58_SIGNATURE.test(actual);
        case 'string':
        case 'number':
        case 'boolean':
          return typeof actual === type;
      }
    });
    expect(matches, `${field}: ${JSON.stringify(actual)} is not ${types.join(' or ')}`).toBe(true);
  }
}
