import { getIntrospectionQuery, getOperationAST, parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { graphqlSchema } from '../src/api/graphql/graphql-schema.js';
import {
  LOAD_COST,
  LOADING_FIELDS,
  MAX_QUERY_ALIASES,
  MAX_QUERY_FIELDS,
  MAX_ROOT_FIELDS,
  measureOperation,
} from '../src/api/graphql/query-limits.js';
import { COST_PER_REQUEST } from '../src/api/graphql/rate-limits.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';

/**
 * GraphQL cost (issue 20, item 1): introspection and every alias count, `limit` is priced like
 * `first`, operations are capped in fields, aliases and root fields before they run, and each
 * operation spends its rate-limit budget by its cost, callers without a key from a per-IP budget.
 */

const measure = (query: string, variables?: Record<string, unknown>) => {
  const document = parse(query);
  return measureOperation(graphqlSchema(), document, getOperationAST(document)!, variables);
};
const aliased = (count: number, selection: string) =>
  `{ ${Array.from({ length: count }, (_, i) => `a${i}: ${selection}`).join(' ')} }`;

/** Every query the web dashboards send (dashboards/web/*.js), as they send it. */
const DASHBOARD_QUERIES = [
  '{ viewer { handle earnedUsdc pendingUsdc totalEarned totalSpent nativeTokens } chainInfo { cluster explorerTxUrlTemplate } }',
  `query ($handle: String!, $from: DateTime!, $to: DateTime!, $g: EarningsGranularity!) {
     creatorEarnings(handle: $handle, from: $from, to: $to, granularity: $g) { bucket amountUsdMicro } }`,
  `{ viewer {
      byEarnings: topPosts(by: EARNINGS, first: 5) { postId type content earnedUsdMicro likes replies quotes reposts }
      byEngagement: topPosts(by: ENGAGEMENT, first: 5) { postId type content earnedUsdMicro likes replies quotes reposts } } }`,
  '{ viewer { transactions(first: 20) { edges { node { id type description amountUsd swapTx createdAt counterparty } } } } }',
  `query ($status: ReconciliationStatus, $day: String, $after: String) {
     reconciliationExceptions(status: $status, day: $day, first: 50, after: $after) {
       edges { node { movementId signature day status ledgerAmountUsdMicro chainAmountUsdMicro commitment detail checkedAt } }
       pageInfo { hasNextPage endCursor } } }`,
  `query ($sig: String!) { chainTransaction(signature: $sig) {
     signature slot blockTime fee status error movements { owner tokenAccount mint amount }
     reconciliation { status ledgerAmountUsdMicro chainAmountUsdMicro commitment detail checkedAt } } }`,
  `query ($n: Int!) { creatorFundEpochs(limit: $n) {
     start end budgetNative paidNative authorCount status note batchSignatures } }`,
  `{ viewer { handle displayName role walletAddress earnedUsdc pendingUsdc totalEarned totalSpent
       apiKeys { id scopes createdAt lastUsedAt revokedAt } }
     chainInfo { cluster faucetAvailable } }`,
];

describe('the cost of an operation', () => {
  test('every field LOADING_FIELDS names exists in the schema', () => {
    const schema = graphqlSchema();
    for (const entry of LOADING_FIELDS) {
      const [type, field] = entry.split('.') as [string, string];
      const named = schema.getType(type);
      expect(named && 'getFields' in named && named.getFields()[field], entry).toBeTruthy();
    }
  });

  test('introspection costs like any other field; __typename costs nothing', () => {
    expect(measure('{ __schema { types { name } } }')).toMatchObject({ cost: 3, fields: 3 });
    expect(measure('{ __type(name: "Post") { fields { name } } }').cost).toBe(3);
    expect(measure('{ __typename }')).toMatchObject({ cost: 0, fields: 1 });
    // Aliases are separate selections, counted and priced each.
    expect(measure(aliased(300, '__schema { types { name } }'))).toMatchObject({
      cost: 900,
      fields: 900,
      aliases: 300,
    });
  });

  test('`limit` is priced like `first`: the literal, the variable once known, else the schema default', () => {
    const epochs = (limit: string) => `query ($n: Int) { creatorFundEpochs${limit} { status note } }`;
    expect(measure(epochs('(limit: 100)')).cost).toBe(LOAD_COST + 100 * 2);
    expect(measure(epochs('(limit: 1)')).cost).toBe(LOAD_COST + 2);
    expect(measure(epochs('')).cost).toBe(LOAD_COST + 24 * 2); // the argument's default, 24
    // While validating a variable is the largest page; when executing, its value.
    expect(measure(epochs('(limit: $n)')).cost).toBe(LOAD_COST + 100 * 2);
    expect(measure(epochs('(limit: $n)'), { n: 3 }).cost).toBe(LOAD_COST + 3 * 2);
    // A connection without `first` is priced as its default page (20), not as one node.
    expect(measure('{ feed { edges { node { id } } } }').cost).toBe(LOAD_COST + 20 * 3);
  });

  test('a field that runs its own query costs LOAD_COST per selection, aliases included', () => {
    expect(measure('{ viewer { nativeTokens } }').cost).toBe(2 * LOAD_COST);
    expect(measure(`{ viewer { ${aliased(25, 'nativeTokens').slice(2, -2)} } }`)).toMatchObject({
      cost: 26 * LOAD_COST,
      aliases: 25,
    });
    // Batched fields (one balance read per request) cost 1.
    expect(measure('{ viewer { earnedUsdc pendingUsdc } }').cost).toBe(LOAD_COST + 2);
  });

  test('a fragment spread many times is measured once: no exponential walk', () => {
    // F0 spreads F1 twice, F1 spreads F2 twice, ...: 2^40 selections of `handle` once expanded.
    const levels = 40;
    const fragments = Array.from({ length: levels }, (_, i) =>
      i === levels - 1
        ? `fragment F${i} on Viewer { handle }`
        : `fragment F${i} on Viewer { ...F${i + 1} ...F${i + 1} }`,
    ).join('\n');
    const measured = measure(`{ viewer { ...F0 } } ${fragments}`);
    expect(measured.fields).toBe(1 + 2 ** (levels - 1));
  });

  test('every dashboard query and GraphiQL’s introspection stay well under every limit', () => {
    for (const query of DASHBOARD_QUERIES) {
      const measured = measure(query, { n: 5 });
      expect(measured.cost, query).toBeLessThanOrEqual(2 * COST_PER_REQUEST);
      expect(measured.fields, query).toBeLessThanOrEqual(MAX_QUERY_FIELDS / 10);
      expect(measured.aliases, query).toBeLessThanOrEqual(MAX_QUERY_ALIASES / 10);
      expect(measured.rootFields, query).toBeLessThanOrEqual(MAX_ROOT_FIELDS / 5);
    }
    const introspection = measure(getIntrospectionQuery({ descriptions: true, inputValueDeprecation: true }));
    expect(introspection.fields).toBeLessThanOrEqual(MAX_QUERY_FIELDS / 2);
    expect(introspection.cost).toBeLessThanOrEqual(COST_PER_REQUEST);
  });
});

describe('GraphQL budgets on a running server', () => {
  let h: ServiceHarness;
  let reader: Member;
  let healthChecks = 0;

  beforeAll(async () => {
    // The default limits: read 60 and anonymous 60 requests per minute.
    h = await openServiceHarness();
    reader = await h.member('cost_reader', 0n, ['read']);
    const checkHealth = h.env.app.checkHealth.bind(h.env.app);
    h.env.app.checkHealth = () => {
      healthChecks++;
      return checkHealth();
    };
  });
  afterAll(async () => {
    await h?.close();
  });

  const anonymous = (query: string) =>
    fetch(`${h.base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
      body: JSON.stringify({ query }),
    });
  const asReader = (query: string, variables: Record<string, unknown> = {}) =>
    fetch(`${h.base}/graphql`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${reader.key}`,
        'content-type': 'application/json',
        accept: 'application/graphql-response+json',
      },
      body: JSON.stringify({ query, variables }),
    });
  type Body = { data?: unknown; errors?: Array<{ message: string; extensions: Record<string, unknown> }> };
  /** `r` of the RateLimit header: what the bucket has left after this request. */
  const remaining = (response: Response) =>
    Number(/;r=(\d+)/.exec(response.headers.get('ratelimit') ?? '')?.[1]);

  /** Refused before execution: 400, no data, no budget spent (so no RateLimit header). */
  const refusedCodes = async (response: Response) => {
    expect(response.status).toBe(400);
    expect(response.headers.get('ratelimit')).toBeNull();
    const body = (await response.json()) as Body;
    expect(body.data).toBeUndefined();
    return body.errors?.map((error) => error.extensions?.code) ?? [];
  };

  test('300 aliased __schema from a caller without a key are refused before anything executes', async () => {
    // 2,400 tokens: refused by the parser.
    expect(await refusedCodes(await anonymous(aliased(300, '__schema { types { name } }')))).toEqual([
      'QUERY_TOO_LARGE',
    ]);
    // 100 of them fit the token limit: refused by the alias (and root-field) limits.
    expect(await refusedCodes(await anonymous(aliased(100, '__schema { types { name } }')))).toContain(
      'TOO_MANY_ALIASES',
    );
    // __type lookups are aliases like any other: 31 are one too many.
    const types = Array.from({ length: 31 }, (_, i) => `t${i}: __type(name: "Post") { name }`).join(' ');
    expect(await refusedCodes(await anonymous(`{ ${types} }`))).toContain('TOO_MANY_ALIASES');
  });

  test('2,000 aliased health from a caller without a key are refused before any probe runs', async () => {
    const before = healthChecks;
    // 12,000 tokens: refused while parsing.
    const huge = await anonymous(aliased(2_000, 'health{status}'));
    const hugeCodes = await refusedCodes(huge);
    expect(hugeCodes).toEqual(['QUERY_TOO_LARGE']);
    // 200 fit the parser's limit; validation refuses them on every count.
    expect(await refusedCodes(await anonymous(aliased(200, 'health{status}')))).toEqual(
      expect.arrayContaining(['TOO_MANY_ALIASES', 'TOO_MANY_ROOT_FIELDS', 'QUERY_TOO_COSTLY']),
    );
    expect(healthChecks).toBe(before);
    // One health selection still answers (and runs the probes at most once).
    const one = (await (await anonymous('{ health { status } }')).json()) as Body;
    expect(one.errors).toBeUndefined();
    expect(healthChecks - before).toBeLessThanOrEqual(1);
  });

  test('500 aliased viewer.nativeTokens are refused; 25 spend by what they load', async () => {
    const refused = (await (
      await asReader(`{ viewer { ${aliased(500, 'nativeTokens').slice(2, -2)} } }`)
    ).json()) as Body;
    expect(refused.data).toBeUndefined();
    expect(refused.errors?.map((error) => error.extensions.code)).toContain('TOO_MANY_ALIASES');

    const first = await asReader('{ viewer { handle } }');
    expect(((await first.json()) as Body).errors).toBeUndefined();
    const before = remaining(first);
    const heavy = await asReader(`{ viewer { ${aliased(25, 'nativeTokens').slice(2, -2)} } }`);
    expect(((await heavy.json()) as Body).errors).toBeUndefined();
    // 26 loads at LOAD_COST each: ceil(2,600 / 500) = 6 read requests, where it was 1.
    expect(before - remaining(heavy)).toBe(Math.ceil((26 * LOAD_COST) / COST_PER_REQUEST));
  });

  test('creatorFundEpochs spends by its limit (it spent nothing before)', async () => {
    const epochs = 'query ($n: Int) { creatorFundEpochs(limit: $n) { start end status note paidNative } }';
    const small = await asReader(epochs, { n: 1 });
    expect(((await small.json()) as Body).errors).toBeUndefined();
    const large = await asReader(epochs, { n: 100 });
    expect(((await large.json()) as Body).errors).toBeUndefined();
    // limit 1: 105, one request; limit 100: 600, two requests.
    expect(remaining(small) - remaining(large)).toBe(2);
  });

  test('a page costing two requests spends two again when answered from the response cache', async () => {
    const page = `{ feed(sort: LATEST, first: 50) { edges { cursor node { id type content createdAt likeCount
      replyCount repostCount viewerHasLiked author { handle displayName avatarUrl } } } pageInfo { endCursor } } }`;
    const first = await asReader(page);
    expect(((await first.json()) as Body).errors).toBeUndefined();
    // Asked again at once (well within READ_CACHE_TTL_MS, nothing written): the cached answer.
    const second = await asReader(page);
    expect(((await second.json()) as Body).errors).toBeUndefined();
    const third = await asReader(page);
    expect(((await third.json()) as Body).errors).toBeUndefined();
    expect(remaining(first) - remaining(second)).toBe(2);
    expect(remaining(second) - remaining(third)).toBe(2);
  });

  test('a mutation spends its REST twin’s bucket per field, not the read bucket', async () => {
    const engager = await h.member('cost_engager', 0n, ['read', 'engage']);
    const call = (query: string) =>
      fetch(`${h.base}/graphql`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${engager.key}`,
          'content-type': 'application/json',
          accept: 'application/graphql-response+json',
        },
        body: JSON.stringify({ query }),
      });
    const read = await call('{ viewer { handle } }');
    expect(read.headers.get('ratelimit')).toMatch(/^"read";r=59;/);
    const follow = await call(
      'mutation { a: follow(handle: "cost_reader") { followed } b: unfollow(handle: "cost_reader") { followed } }',
    );
    expect(((await follow.json()) as Body).errors).toBeUndefined();
    expect(follow.headers.get('ratelimit')).toMatch(/^"like";r=28;/);
    const again = await call('{ viewer { handle } }');
    expect(again.headers.get('ratelimit')).toMatch(/^"read";r=58;/);
  });

  test('callers without a key share a per-IP budget; a key holder’s budget is apart', async () => {
    // Cheap anonymous operations until the per-IP budget (60 per minute) refuses one.
    let refused: Response | undefined;
    for (let i = 0; i < 70 && !refused; i++) {
      const response = await anonymous('{ __typename }');
      if (response.status === 429) refused = response;
      else expect(((await response.json()) as Body).errors, `anonymous ${i + 1}`).toBeUndefined();
    }
    expect(refused, 'refused within 61 requests').toBeDefined();
    const body = (await refused!.json()) as Body;
    expect(body.data).toBeUndefined();
    expect(body.errors?.[0]).toMatchObject({
      message: expect.stringMatching(/^Rate limit exceeded: 60 anonymous requests per window/),
      extensions: { code: 'RATE_LIMITED', retryAfterSeconds: expect.any(Number) },
    });
    expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // Refused before it executes: not even the health probes run.
    const before = healthChecks;
    expect((await anonymous('{ health { status } }')).status).toBe(429);
    expect(healthChecks).toBe(before);
    // The same address with a key reads from the account's own budget.
    const keyed = await asReader('{ viewer { handle } }');
    expect(keyed.status).toBe(200);
    expect(((await keyed.json()) as Body).errors).toBeUndefined();
  });
});
