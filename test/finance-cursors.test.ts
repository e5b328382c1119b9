import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildServer } from '../src/api/server.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';
import { missingVerdict } from './support/verdict-rows.js';

/**
 * The finance exception list's cursors are signed like every other cursor. Before, a cursor was
 * base64url JSON of a row's position that anyone could write: a client could start the list
 * anywhere it liked. A cursor written by hand in that shape, or a real one changed, is now
 * BAD_USER_INPUT naming `after`, while the cursors the API gives out still page through the list.
 */
let env: TestEnv;
let server: FastifyInstance;
let financeKey: string;

const VERDICTS = [
  ['0a0e5a5e-1111-4111-8111-111111111111', 'sig-a', '2026-11-24'],
  ['fb0e5a5e-2222-4222-8222-222222222222', 'sig-b', '2026-11-24'],
  ['0a0e5a5e-3333-4333-8333-333333333333', 'sig-c', '2026-02-28'],
] as const;
/** The list's order: newest day first, then movement id descending. */
const LISTED = ['sig-b', 'sig-a', 'sig-c'];

beforeAll(async () => {
  env = await openTestEnv({});
  server = await buildServer(env.app, { queueBoard: false });
  const finance = await createAccount(env.app, { handle: 'cursor_books', role: 'finance' });
  financeKey = (await createApiKey(env.app.apiKeys, finance.id)).key;
  await env.app.clickhouse.insertRows(
    'reconciliation',
    VERDICTS.map(([movementId, signature, day]) =>
      missingVerdict(movementId, signature, day, '2026-11-25 00:00:00.000'),
    ),
  );
});
afterAll(async () => {
  await server?.close();
  await env?.close();
});

interface Page {
  signatures: string[];
  hasNextPage: boolean;
  endCursor: string | null;
}

async function exceptionsPage(after?: string): Promise<{ page?: Page; errors?: any[] }> {
  const response = await server.inject({
    method: 'POST',
    url: '/graphql',
    headers: { authorization: `Bearer ${financeKey}`, 'content-type': 'application/json' },
    payload: {
      query: `query ($after: String) {
        reconciliationExceptions(first: 1, after: $after) {
          edges { cursor node { signature } } pageInfo { hasNextPage endCursor } } }`,
      variables: { after },
    },
  });
  expect(response.statusCode).toBe(200);
  const body = response.json<{
    data?: {
      reconciliationExceptions: {
        edges: Array<{ node: { signature: string } }>;
        pageInfo: { hasNextPage: boolean; endCursor: string | null };
      };
    };
    errors?: any[];
  }>();
  if (body.errors) return { errors: body.errors };
  const connection = body.data!.reconciliationExceptions;
  return {
    page: {
      signatures: connection.edges.map((edge) => edge.node.signature),
      hasNextPage: connection.pageInfo.hasNextPage,
      endCursor: connection.pageInfo.endCursor,
    },
  };
}

const refusedAsAfter = [
  expect.objectContaining({
    message: 'after is not a cursor this API gave out',
    extensions: { code: 'BAD_USER_INPUT', field: 'after' },
  }),
];

/** What a cursor of this list carries, decoded the way a client would: base64url JSON before the dot. */
function positionIn(cursor: string): unknown[] {
  return JSON.parse(Buffer.from(cursor.split('.')[0]!, 'base64url').toString('utf8')) as unknown[];
}
const encoded = (position: unknown[]) => Buffer.from(JSON.stringify(position)).toString('base64url');

describe('reconciliationExceptions cursors', () => {
  test('the cursors it gives out page through every exception, one a page', async () => {
    const seen: string[] = [];
    let after: string | undefined;
    for (let round = 0; round < 5; round++) {
      const { page, errors } = await exceptionsPage(after);
      expect(errors).toBeUndefined();
      seen.push(...page!.signatures);
      if (!page!.hasNextPage) break;
      after = page!.endCursor!;
    }
    expect(seen).toEqual(LISTED);
  });

  test('a cursor made by hand in the shape the API uses, or a real one changed, is BAD_USER_INPUT naming after', async () => {
    const first = (await exceptionsPage()).page!;
    expect(first.signatures).toEqual(['sig-b']);
    const real = first.endCursor!;
    expect(positionIn(real)).toEqual(['2026-11-24', VERDICTS[1][0], 'sig-b']);

    // Written by hand as base64url JSON of a position, the shape cursors had before they were
    // signed: one that skips sig-a (the page after it would be sig-c).
    const skipped = ['2026-11-24', VERDICTS[0][0], 'sig-a'];
    const handMade = await exceptionsPage(encoded(skipped));
    expect(handMade.page, 'a hand-made cursor pages').toBeUndefined();
    expect(handMade.errors).toEqual(refusedAsAfter);

    // Signed now, as the feed's and the history's cursors are: a payload and a 128-bit MAC.
    expect(real).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/);
    const [payload, mac] = real.split('.') as [string, string];
    const changed = [
      ['the real position without its signature', payload],
      ['a changed position with the real signature', `${encoded(skipped)}.${mac}`],
      [
        'a changed position with a made-up signature',
        `${encoded(skipped)}.${randomBytes(16).toString('base64url')}`,
      ],
      ['the real position, its signature cut short', `${payload}.${mac.slice(0, -2)}`],
      ['the real cursor with a second signature', `${real}.${mac}`],
    ] as const;
    for (const [what, cursor] of changed) {
      const { page, errors } = await exceptionsPage(cursor);
      expect(page, what).toBeUndefined();
      expect(errors, what).toEqual(refusedAsAfter);
    }

    // The real cursor of the previous page still pages on, to the row after it.
    const second = (await exceptionsPage(real)).page!;
    expect(second.signatures).toEqual(['sig-a']);
    expect((await exceptionsPage(second.endCursor!)).page!.signatures).toEqual(['sig-c']);
  });
});
