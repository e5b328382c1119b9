import { getIntrospectionQuery } from 'graphql';
import { serverAudits } from 'graphql-http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { MAX_QUERY_COST, MAX_QUERY_DEPTH } from '../src/api/graphql/query-limits.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';

/**
 * Query safety on /graphql: depth and cost limits, and the GraphQL-over-HTTP server audits. Limits
 * on fields, aliases and budgets by cost: graphql-cost.test.ts.
 */
let h: ServiceHarness;
let reader: Member;

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
  reader = await h.member('limits_reader', 0n, ['read']);
});
afterAll(async () => {
  await h?.close();
});

/** `post(id) { parent { parent { ... { id } } } }`, `levels` fields deep. */
const nestedParents = (levels: number) =>
  `{ post(id: "00000000-0000-4000-8000-000000000000") ${'{ parent '.repeat(levels - 2)}{ id }${' }'.repeat(levels - 2)} }`;

describe('GraphQL query limits', () => {
  test(`a query nested deeper than ${MAX_QUERY_DEPTH} levels is refused before it runs`, async () => {
    const allowed = await h.gql(reader, nestedParents(MAX_QUERY_DEPTH));
    expect(allowed.errors).toBeUndefined();
    const refused = await h.gql(reader, nestedParents(MAX_QUERY_DEPTH + 1));
    expect(refused.data).toBeUndefined();
    expect(refused.errors?.[0]).toMatchObject({
      extensions: { code: 'QUERY_TOO_DEEP', depth: MAX_QUERY_DEPTH + 1, maxDepth: MAX_QUERY_DEPTH },
    });
    expect(refused.errors?.[0]?.message).toMatch(/at most 12/);
  });

  test(`a query that may load more than ${MAX_QUERY_COST} objects is refused; variables count as full pages`, async () => {
    const nested = (
      first: string,
    ) => `query ${first === '$n' ? '($n: Int)' : ''} { feed(sort: LATEST, first: ${first}) { edges { node {
      replies(first: ${first}) { edges { node { replies(first: ${first}) { edges { node { id } } } } } } } } } }`;
    const costly = await h.gql(reader, nested('50'));
    expect(costly.errors?.[0]).toMatchObject({
      extensions: { code: 'QUERY_TOO_COSTLY', maxCost: MAX_QUERY_COST },
    });
    expect((await h.gql(reader, nested('$n'), { n: 2 })).errors?.[0]?.extensions.code).toBe(
      'QUERY_TOO_COSTLY',
    );
    const cheap = await h.gql(reader, nested('5'));
    expect(cheap.errors).toBeUndefined();
  });

  test('introspection is counted but GraphiQL’s and code generators’ queries pass', async () => {
    const introspect = async (query: string) => {
      const response = await fetch(`${h.base}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query }),
      });
      return (await response.json()) as { errors?: unknown; data?: { __schema: { types: unknown[] } } };
    };
    // Type references nest deeper than MAX_QUERY_DEPTH: introspection counts as one level there
    // (graphql-js's MaxIntrospectionDepthRule bounds its own nesting).
    const deep = await introspect(`{ __schema { types { name fields { name type { name ofType { name ofType {
      name ofType { name ofType { name ofType { name ofType { name ofType { name } } } } } } } } } } } }`);
    expect(deep.errors).toBeUndefined();
    expect(deep.data?.__schema.types.length).toBeGreaterThan(10);
    // What GraphiQL sends (graphql-js's introspection query with its options).
    const graphiql = await introspect(
      getIntrospectionQuery({
        descriptions: true,
        specifiedByUrl: true,
        directiveIsRepeatable: true,
        schemaDescription: true,
        inputValueDeprecation: true,
      }),
    );
    expect(graphiql.errors).toBeUndefined();
    expect(graphiql.data?.__schema.types.length).toBeGreaterThan(10);
  });
});

describe('GraphQL over HTTP', () => {
  test('every graphql-http server audit passes against /graphql', async () => {
    const results = await Promise.all(serverAudits({ url: `${h.base}/graphql` }).map((audit) => audit.fn()));
    const failed = results.filter((result) => result.status !== 'ok');
    expect(failed.map((result) => `${result.id} ${result.name}: ${result.status}`)).toEqual([]);
    expect(results.length).toBeGreaterThan(50);
  });
});
