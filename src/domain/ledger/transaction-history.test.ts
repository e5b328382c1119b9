import { describe, expect, test } from 'vitest';
import { AppError } from '../errors.js';
import type { OutboxState } from './payment-state.js';
import {
  findPayment,
  listTransactions,
  parseHistoryLimit,
  toTransaction,
  type HistoryRow,
  type TransactionHistoryStore,
} from './transaction-history.js';

const row = (overrides: Partial<HistoryRow>): HistoryRow => ({
  movementId: '5f0e8a52-3c1d-4b6e-9a7f-0c2d4e6f8a9b',
  kind: 'post',
  amountMicro: -1_000_000n,
  createdAt: new Date('2026-11-22T10:00:00.000Z'),
  createdAtExact: '2026-11-22T10:00:00.000001Z',
  idempotencyKey: null,
  reversed: null,
  chainSignature: 'SIG',
  post: { id: 'post-1', type: 'post' },
  outbox: null,
  ...overrides,
});

const CONFIRMED_AT = new Date('2026-11-22T10:00:01.000Z');
const FINALIZED_AT = new Date('2026-11-22T10:00:14.000Z');
const outbox = (status: OutboxState['status'], more: Partial<OutboxState> = {}): OutboxState => ({
  status,
  slot: null,
  confirmedAt: null,
  finalizedAt: null,
  ...more,
});

describe('toTransaction()', () => {
  test.each([
    ['post', 'Post', { post: { id: 'p', type: 'post' } }],
    ['post', 'Reply to a post', { post: { id: 'p', type: 'reply' } }],
    ['post', 'Quote of a post', { post: { id: 'p', type: 'quote' } }],
    ['earn', 'Earned from a reply to your post', { post: { id: 'p', type: 'reply' }, amountMicro: 500_000n }],
    ['earn', 'Earned from a quote of your post', { post: { id: 'p', type: 'quote' }, amountMicro: 500_000n }],
  ] as const)('a post movement reads as %s "%s" from its side', (type, description, overrides) => {
    expect(toTransaction(row(overrides))).toMatchObject({
      type,
      description,
      swapTx: 'SIG',
      relatedPostId: 'p',
    });
  });

  test('a deposit takes its swap_tx from its `deposit:<signature>` key and relates to no post', () => {
    expect(
      toTransaction(
        row({
          kind: 'deposit',
          amountMicro: 3_000_000n,
          idempotencyKey: 'deposit:DEP',
          chainSignature: null,
          post: null,
        }),
      ),
    ).toMatchObject({
      type: 'deposit',
      description: 'Deposit',
      swapTx: 'DEP',
      relatedPostId: null,
      counterparty: null,
    });
  });

  test('a reversal is a refund for the payer and an earnings reversal for the author', () => {
    const reversed = { kind: 'post' as const, idempotencyKey: null };
    expect(toTransaction(row({ kind: 'reversal', amountMicro: 1_000_000n, reversed }))).toMatchObject({
      type: 'refund',
      amountMicro: 1_000_000n,
      description: 'Refund of a failed payment',
      swapTx: 'SIG',
      relatedPostId: 'post-1',
    });
    expect(toTransaction(row({ kind: 'reversal', amountMicro: -500_000n, reversed }))).toMatchObject({
      type: 'refund',
      description: 'Earnings reversed: the payment failed on chain',
    });
  });

  test.each([
    ['signed', 'pending'],
    ['sent', 'pending'],
    ['confirmed', 'confirmed'],
    ['finalized', 'finalized'],
    ['failed', 'failed'],
  ] as const)('an outbox row %s shows status %s', (stored, shown) => {
    expect(toTransaction(row({ outbox: outbox(stored) })).status).toBe(shown);
  });

  test('slot and times are the outbox row’s; an earning and a refund show the paying transaction’s', () => {
    const finalized = outbox('finalized', {
      slot: 1234n,
      confirmedAt: CONFIRMED_AT,
      finalizedAt: FINALIZED_AT,
    });
    for (const overrides of [{}, { amountMicro: 500_000n, post: { id: 'p', type: 'reply' as const } }]) {
      expect(toTransaction(row({ ...overrides, outbox: finalized }))).toMatchObject({
        status: 'finalized',
        slot: 1234,
        confirmedAt: CONFIRMED_AT,
        finalizedAt: FINALIZED_AT,
      });
    }
    const refund = row({
      kind: 'reversal',
      amountMicro: 1_000_000n,
      reversed: { kind: 'post', idempotencyKey: null },
      outbox: outbox('failed', { slot: 99n }),
    });
    expect(toTransaction(refund)).toMatchObject({ status: 'failed', slot: 99, confirmedAt: null });
  });

  test('a deposit (no outbox row) shows confirmed as of its credit; a movement without swap_tx no state', () => {
    const createdAt = new Date('2026-11-22T09:00:00.000Z');
    const deposit = row({
      kind: 'deposit',
      amountMicro: 3_000_000n,
      idempotencyKey: 'deposit:DEP',
      chainSignature: null,
      post: null,
      createdAt,
    });
    expect(toTransaction(deposit)).toMatchObject({
      status: 'confirmed',
      slot: null,
      confirmedAt: createdAt,
      finalizedAt: null,
    });
    expect(toTransaction(row({ kind: 'earn', chainSignature: null, post: null }))).toMatchObject({
      swapTx: null,
      status: null,
      slot: null,
      confirmedAt: null,
      finalizedAt: null,
    });
  });

  test('a send reads as send for the sender and receive for the recipient', () => {
    const send = { kind: 'send' as const, post: null };
    expect(toTransaction(row({ ...send, amountMicro: -2_000_000n })).type).toBe('send');
    expect(toTransaction(row({ ...send, amountMicro: 2_000_000n })).type).toBe('receive');
  });
});

describe('parseHistoryLimit()', () => {
  test('defaults to 20 and takes 1 to 50 as a number or as query-string text', () => {
    expect(parseHistoryLimit(undefined)).toBe(20);
    expect(parseHistoryLimit(null)).toBe(20);
    expect(parseHistoryLimit('1')).toBe(1);
    expect(parseHistoryLimit(50)).toBe(50);
  });

  test.each([0, 51, -1, 1.5, '51', '', ' 5', '1e1', 'ten', true])('refuses %j naming the rule', (raw) => {
    expect(() => parseHistoryLimit(raw)).toThrow(AppError);
    expect(() => parseHistoryLimit(raw)).toThrow('limit must be an integer from 1 to 50 (default 20)');
  });
});

describe('listTransactions()', () => {
  const ACCOUNT = '0b6c5a0e-8d52-4c8e-9d0e-2f1f4b7c9a11';
  const rows = Array.from({ length: 5 }, (_, i) =>
    row({
      movementId: `00000000-0000-4000-8000-00000000000${i}`,
      createdAtExact: `2026-11-22T10:00:0${9 - i}.000000Z`,
    }),
  );
  // Rows are newest first; `after` is honoured by position, as the SQL keyset does.
  const store: TransactionHistoryStore = {
    page: (_accountId, { limit, after }) => {
      const start = after ? rows.findIndex((r) => r.movementId === after.movementId) + 1 : 0;
      return Promise.resolve(rows.slice(start, start + limit));
    },
    bySignature: () => Promise.reject(new Error('not used')),
  };
  const deps = { history: store, cursorSecret: 's' };

  test('pages walk every row once; next_cursor only while more remain', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await listTransactions(deps, ACCOUNT, { limit: 2, cursor });
      seen.push(...page.items.map((item) => item.transaction.id));
      expect(page.nextCursor !== undefined).toBe(page.hasMore);
      if (!page.hasMore) break;
      cursor = page.nextCursor;
    }
    expect(seen).toEqual(rows.map((r) => r.movementId));
  });

  test('names the transport’s arguments in its errors', async () => {
    await expect(
      listTransactions(deps, ACCOUNT, { limit: 99 }, { limit: 'first', cursor: 'after' }),
    ).rejects.toMatchObject({ code: 'invalid_request', details: { field: 'first' } });
    await expect(
      listTransactions(deps, ACCOUNT, { cursor: 'x' }, { limit: 'first', cursor: 'after' }),
    ).rejects.toMatchObject({ code: 'invalid_request', details: { field: 'after' } });
  });
});

describe('findPayment()', () => {
  const ACCOUNT = '0b6c5a0e-8d52-4c8e-9d0e-2f1f4b7c9a11';
  const SIGNATURE = '5'.repeat(88);
  const asked: string[] = [];
  const store = (rows: HistoryRow[]): TransactionHistoryStore => ({
    page: () => Promise.reject(new Error('not used')),
    bySignature: (_accountId, signature) => {
      asked.push(signature);
      return Promise.resolve(rows);
    },
  });

  test('answers the account’s entry of the payment, with its current swap_tx and state', async () => {
    const found = await findPayment(
      { history: store([row({ chainSignature: 'CURRENT', outbox: outbox('confirmed', { slot: 7n }) })]) },
      ACCOUNT,
      SIGNATURE,
    );
    expect(found).toMatchObject({ type: 'post', swapTx: 'CURRENT', status: 'confirmed', slot: 7 });
  });

  test('nothing of the account is not_found', async () => {
    await expect(findPayment({ history: store([]) }, ACCOUNT, SIGNATURE)).rejects.toMatchObject({
      code: 'not_found',
    });
  });

  test.each(['', 'short', `${'5'.repeat(87)}0`, `${'5'.repeat(89)}`, `${'5'.repeat(80)}/../../`])(
    'a text that is no signature (%j) is not_found without a query',
    async (text) => {
      asked.length = 0;
      await expect(findPayment({ history: store([row({})]) }, ACCOUNT, text)).rejects.toMatchObject({
        code: 'not_found',
      });
      expect(asked).toEqual([]);
    },
  );
});
