import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { reconcileRound } from '../src/app/indexer/reconciler.js';
import { readPoolReserves } from '../src/app/swap/pool-reserves.js';
import { quoteSellNative, type PoolReserves } from '../src/domain/swap/constant-product.js';
import { formatMicroUsd } from '../src/domain/money/usd.js';
import { onChainNative, onChainUsdc, settledMoney } from './support/balances.js';
import { depositNative } from './support/deposit.js';
import { expectShape } from './support/expect-shape.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { reconcileUntilQuiet } from './support/reconcile-rounds.js';
import { paymentsSettled } from './support/settled.js';

/**
 * Swap to USDC end to end against the real stack (Postgres, Redis, ClickHouse, localnet, the
 * payments worker): pricing against chain reserves, serialisation, refusals that move nothing,
 * ledger = chain in both currencies, and reconciliation.
 */
let h: ServiceHarness;
let alice: Member;
const TOKEN = 10n ** 9n;

const usd = (micro: bigint) => Number(formatMicroUsd(micro));

async function reserves(): Promise<PoolReserves> {
  await paymentsSettled(h.env.app.db);
  return readPoolReserves(h.env.app.rpc, h.platform, 'confirmed');
}

/** A member with `tokens` native tokens on chain and in the ledger (and $1 USDC). */
async function holder(handle: string, units: bigint): Promise<Member> {
  const member = await h.member(handle, 1_000_000n);
  await depositNative(h.env.app, h.platform, member.account, units);
  return member;
}

/** Each of the members' USDC and native ledger balances equal their on-chain token balances. */
async function expectLedgerEqualsChain(members: Member[]) {
  for (const m of members) {
    const usdc = await settledMoney(h.env.app, m.account.id);
    const native = await h.env.app.ledger.money(m.account.id, 'native');
    expect(usdc.pendingMicro, m.account.handle).toBe(0n);
    expect(usdc.availableMicro, m.account.handle).toBe(
      await onChainUsdc(h.env.app, h.platform, m.account.walletAddress),
    );
    expect(native.availableMicro, m.account.handle).toBe(
      await onChainNative(h.env.app, h.platform, m.account.walletAddress),
    );
  }
}

/** What a refused swap must leave untouched. */
async function snapshot(m: Member) {
  await paymentsSettled(h.env.app.db);
  const { rows } = await sql<{ n: string }>`SELECT count(*)::text AS n FROM swaps`.execute(h.env.app.db);
  return {
    pool: await reserves(),
    usdc: await h.env.app.ledger.money(m.account.id),
    native: await h.env.app.ledger.money(m.account.id, 'native'),
    chainUsdc: await onChainUsdc(h.env.app, h.platform, m.account.walletAddress),
    chainNative: await onChainNative(h.env.app, h.platform, m.account.walletAddress),
    swaps: rows[0]?.n,
  };
}

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
  alice = await holder('swap_alice', 5_000n * TOKEN);
});
afterAll(async () => {
  await h?.close();
});

describe('GET /swap-quote', () => {
  test('answers the documented shape, priced on the chain reserves, and moves nothing', async () => {
    const before = await reserves();
    const response = await h.call(alice, 'GET', `/swap-quote?amount_tokens=${1_000n * TOKEN}`);
    expect(response.status).toBe(200);
    const body = await response.json();
    expectShape(body, {
      amount_tokens: 'string',
      amount_usdc: 'number',
      fee_tokens: 'string',
      fee_bps: 'integer',
      price_impact_bps: 'integer',
      reserve_tokens: 'string',
      reserve_usdc: 'number',
    });
    const expected = quoteSellNative(before, 1_000n * TOKEN);
    expect(body).toEqual({
      amount_tokens: (1_000n * TOKEN).toString(),
      amount_usdc: usd(expected.amountUsdcMicro),
      fee_tokens: (3n * TOKEN).toString(),
      fee_bps: 30,
      price_impact_bps: expected.priceImpactBps,
      reserve_tokens: before.nativeUnits.toString(),
      reserve_usdc: usd(before.usdcMicro),
    });
    expect(await reserves()).toEqual(before);
  });
});

describe('POST /swap-to-usdc', () => {
  test('sells tokens at the quoted price in one transaction; history, profile and ledger = chain follow', async () => {
    const before = await reserves();
    const expected = quoteSellNative(before, 1_000n * TOKEN);
    const response = await h.call(alice, 'POST', '/swap-to-usdc', { amount_tokens: String(1_000n * TOKEN) });
    expect(response.status).toBe(201);
    const body = (await response.json()) as { amount_usdc: number; swap_tx: string };
    expectShape(body, { amount_usdc: 'number', swap_tx: 'signature' });
    expect(body.amount_usdc).toBe(usd(expected.amountUsdcMicro));

    const after = await reserves();
    expect(after).toEqual(expected.reservesAfter);
    await expectLedgerEqualsChain([alice]);
    expect((await h.env.app.ledger.money(alice.account.id, 'native')).availableMicro).toBe(4_000n * TOKEN);

    const history = (await (await h.call(alice, 'GET', '/me/transactions')).json()) as {
      transactions: Array<Record<string, unknown>>;
    };
    const entry = history.transactions.find((t) => t.type === 'swap');
    expect(entry).toMatchObject({
      type: 'swap',
      amount_usd: body.amount_usdc,
      swap_tx: body.swap_tx,
      related_post_id: null,
      counterparty: null,
    });

    const me = (await (await h.call(alice, 'GET', '/me')).json()) as Record<string, unknown>;
    expect(me.native_tokens).toBe((4_000n * TOKEN).toString());
    expect(me.earned_usdc).toBe(usd(1_000_000n + expected.amountUsdcMicro));
  });

  test('8 concurrent swaps each price against the reserves the previous one left', async () => {
    const sellers = await Promise.all([0, 1, 2, 3].map((k) => holder(`swap_seller_${k}`, 100_000n * TOKEN)));
    const start = await reserves();
    const amounts = [1n, 7n, 25n, 300n, 4_000n, 12n, 9_999n, 50_000n].map((n) => n * TOKEN + 123n);
    const responses = await Promise.all(
      amounts.map((amount, k) =>
        h.call(sellers[k % 4]!, 'POST', '/swap-to-usdc', { amount_tokens: amount.toString() }),
      ),
    );
    const bodies = await Promise.all(
      responses.map(async (r) => {
        expect(r.status).toBe(201);
        return (await r.json()) as { amount_usdc: number; swap_tx: string };
      }),
    );

    // The order the pool executed them in is the order they committed (one at a time, by lock).
    const { rows } = await sql<{
      amount_tokens: bigint;
      amount_usdc: bigint;
      reserve_native_before: bigint;
      reserve_usdc_before: bigint;
      signature: string;
    }>`
      SELECT s.amount_tokens, s.amount_usdc, s.reserve_native_before, s.reserve_usdc_before, c.signature
        FROM swaps s JOIN chain_transactions c ON c.movement_id = s.movement_id
       WHERE s.created_at > (SELECT max(created_at) FROM swaps) - interval '1 hour'
       ORDER BY s.created_at, s.id`.execute(h.env.app.db);
    const batch = rows.slice(-8);
    let replay = start;
    for (const row of batch) {
      expect({ nativeUnits: row.reserve_native_before, usdcMicro: row.reserve_usdc_before }).toEqual(replay);
      const quote = quoteSellNative(replay, row.amount_tokens);
      expect(row.amount_usdc).toBe(quote.amountUsdcMicro);
      // The response carrying this transaction said the same amount.
      const k = bodies.findIndex((b) => b.swap_tx === row.signature);
      expect(k).toBeGreaterThanOrEqual(0);
      expect(bodies[k]!.amount_usdc).toBe(usd(quote.amountUsdcMicro));
      expect(amounts[k]).toBe(row.amount_tokens);
      replay = quote.reservesAfter;
    }
    expect(await reserves()).toEqual(replay);
    await expectLedgerEqualsChain(sellers);
  });

  test('below min_amount_usdc: 409 slippage_exceeded, nothing moves on the ledger or the chain', async () => {
    const before = await snapshot(alice);
    const quote = quoteSellNative(before.pool, 100n * TOKEN);
    const response = await h.call(alice, 'POST', '/swap-to-usdc', {
      amount_tokens: Number(100n * TOKEN),
      min_amount_usdc: usd(quote.amountUsdcMicro + 1n),
    });
    expect(response.status).toBe(409);
    const body = await response.json();
    expectShape(body, { error: 'string', message: 'string' });
    expect(body.error).toBe('slippage_exceeded');
    expect(await snapshot(alice)).toEqual(before);

    // At exactly the quote, it goes through.
    const ok = await h.call(alice, 'POST', '/swap-to-usdc', {
      amount_tokens: Number(100n * TOKEN),
      min_amount_usdc: formatMicroUsd(quote.amountUsdcMicro),
    });
    expect(ok.status).toBe(201);
    expect((await ok.json()).amount_usdc).toBe(usd(quote.amountUsdcMicro));
  });

  test('more tokens than held: 402 with the native balance fields, nothing moves', async () => {
    const before = await snapshot(alice);
    const required = before.native.availableMicro + 1n;
    const response = await h.call(alice, 'POST', '/swap-to-usdc', { amount_tokens: required.toString() });
    expect(response.status).toBe(402);
    const body = await response.json();
    expectShape(body, {
      error: 'string',
      message: 'string',
      balance_tokens: 'string',
      required_tokens: 'string',
    });
    expect(body).toMatchObject({
      error: 'insufficient_balance',
      balance_tokens: before.native.availableMicro.toString(),
      required_tokens: required.toString(),
    });
    expect(await snapshot(alice)).toEqual(before);
  });

  test('bad input is 400 JSON, for the swap and the quote', async () => {
    const before = await snapshot(alice);
    const bad: unknown[] = [
      0,
      -5,
      1.5,
      '1.5',
      '-1',
      'abc',
      '',
      '1000000000000000001',
      '99999999999999999999999999',
      null,
      true,
      { n: 1 },
    ];
    for (const amount of bad) {
      const response = await h.call(alice, 'POST', '/swap-to-usdc', { amount_tokens: amount });
      expect(response.status, JSON.stringify(amount)).toBe(400);
      expectShape(await response.json(), { error: 'string', message: 'string' });
    }
    for (const body of [{}, { amount_tokens: 5, extra: 1 }, { amount_tokens: 5, min_amount_usdc: -1 }]) {
      const response = await h.call(alice, 'POST', '/swap-to-usdc', body);
      expect(response.status, JSON.stringify(body)).toBe(400);
    }
    // Above 2^53 a JSON number has already lost digits: refused (a string keeps them).
    const imprecise = await h.callRaw(
      alice,
      'POST',
      '/swap-to-usdc',
      '{"amount_tokens": 12345678901234567890}',
    );
    expect(imprecise.status).toBe(400);
    const garbage = await h.callRaw(alice, 'POST', '/swap-to-usdc', '{"amount_tokens": 1e30');
    expect(garbage.status).toBe(400);
    expectShape(await garbage.json(), { error: 'string', message: 'string' });
    for (const query of [
      '',
      '?amount_tokens=0',
      '?amount_tokens=-1',
      '?amount_tokens=1.5',
      '?amount_tokens=x',
    ]) {
      const response = await h.call(alice, 'GET', `/swap-quote${query}`);
      expect(response.status, query).toBe(400);
      expectShape(await response.json(), { error: 'string', message: 'string' });
    }
    expect(await snapshot(alice)).toEqual(before);
  });

  test('an Idempotency-Key repeat answers the first swap and swaps once', async () => {
    const headers = { 'idempotency-key': 'swap-once-1' };
    const first = await h.call(alice, 'POST', '/swap-to-usdc', { amount_tokens: 10 * 10 ** 9 }, headers);
    expect(first.status).toBe(201);
    const firstBody = await first.json();
    const native = await h.env.app.ledger.money(alice.account.id, 'native');
    const again = await h.call(alice, 'POST', '/swap-to-usdc', { amount_tokens: 10 * 10 ** 9 }, headers);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.json()).toEqual(firstBody);
    expect(await h.env.app.ledger.money(alice.account.id, 'native')).toEqual(native);
  });

  test('a key without the send scope gets 403; read may quote', async () => {
    const reader = await h.member('swap_reader', 1_000_000n, ['read']);
    const refused = await h.call(reader, 'POST', '/swap-to-usdc', { amount_tokens: 1_000 });
    expect(refused.status).toBe(403);
    expect((await h.call(reader, 'GET', '/swap-quote?amount_tokens=1000000')).status).toBe(200);
  });
});

describe('GraphQL', () => {
  test('swapQuote and swapToUsdc share the service; nativeTokens on the viewer', async () => {
    const bob = await holder('swap_bob', 50n * TOKEN);
    const before = await reserves();
    const expected = quoteSellNative(before, 20n * TOKEN);
    const quoted = await h.gql(
      bob,
      `query ($a: String!) { swapQuote(amountTokens: $a) {
         amountTokens amountUsdcMicro amountUsdc feeTokens feeBps priceImpactBps reserveTokens reserveUsdcMicro } }`,
      { a: (20n * TOKEN).toString() },
    );
    expect(quoted.errors).toBeUndefined();
    expect(quoted.data.swapQuote).toEqual({
      amountTokens: (20n * TOKEN).toString(),
      amountUsdcMicro: expected.amountUsdcMicro.toString(),
      amountUsdc: formatMicroUsd(expected.amountUsdcMicro),
      feeTokens: expected.feeTokens.toString(),
      feeBps: 30,
      priceImpactBps: expected.priceImpactBps,
      reserveTokens: before.nativeUnits.toString(),
      reserveUsdcMicro: before.usdcMicro.toString(),
    });

    const slipped = await h.gql(
      bob,
      `mutation ($a: String!, $m: String) { swapToUsdc(amountTokens: $a, minAmountUsdc: $m) { swapTx } }`,
      { a: (20n * TOKEN).toString(), m: '1000000' },
    );
    expect(slipped.errors?.[0]?.extensions?.code).toBe('SLIPPAGE_EXCEEDED');

    const swapped = await h.gql(
      bob,
      `mutation ($a: String!) { swapToUsdc(amountTokens: $a) { id amountTokens amountUsdcMicro amountUsdc swapTx status } }`,
      { a: (20n * TOKEN).toString() },
    );
    expect(swapped.errors).toBeUndefined();
    expect(swapped.data.swapToUsdc).toMatchObject({
      amountTokens: (20n * TOKEN).toString(),
      amountUsdcMicro: expected.amountUsdcMicro.toString(),
      amountUsdc: formatMicroUsd(expected.amountUsdcMicro),
      status: expect.stringMatching(/^(SENT|CONFIRMED|FINALIZED)$/),
    });

    const poor = await h.gql(bob, `mutation { swapToUsdc(amountTokens: "${100n * TOKEN}") { swapTx } }`);
    expect(poor.errors?.[0]?.extensions).toMatchObject({
      code: 'INSUFFICIENT_FUNDS',
      balanceTokens: (30n * TOKEN).toString(),
    });

    const viewer = await h.gql(bob, '{ viewer { nativeTokens earnedUsdc } }');
    expect(viewer.data.viewer.nativeTokens).toBe((30n * TOKEN).toString());
    await expectLedgerEqualsChain([bob]);
  });
});

describe('reconciliation', () => {
  test('every swap reconciles matched, both currencies compared', async () => {
    await paymentsSettled(h.env.app.db);
    const reconcile = (finalizedRecheckMs: number) => reconcileUntilQuiet(h.env.app, { finalizedRecheckMs });
    const verdicts = async () =>
      (
        await sql<{ status: string | null; commitment: string | null; n: string }>`
          SELECT c.reconciled_status AS status, c.reconciled_commitment AS commitment, count(*)::text AS n
            FROM swaps s JOIN chain_transactions c ON c.movement_id = s.movement_id
           GROUP BY 1, 2`.execute(h.env.app.db)
      ).rows;
    const { rows: count } = await sql<{ n: string }>`SELECT count(*)::text AS n FROM swaps`.execute(
      h.env.app.db,
    );
    const swaps = count[0]!.n;
    expect(Number(swaps)).toBeGreaterThanOrEqual(12);

    await reconcile(600_000);
    expect(await verdicts()).toEqual([{ status: 'matched', commitment: 'confirmed', n: swaps }]);
    // Once the slots have passed, the finalized look agrees.
    h.env.localnet!.chain.warp(40);
    await reconcile(0);
    expect(await verdicts()).toEqual([{ status: 'matched', commitment: 'finalized', n: swaps }]);

    // The verdict's amounts are the USDC the swap paid (ClickHouse amounts are micro-USD).
    const { rows: one } = await sql<{ movement_id: string; amount_usdc: bigint }>`
      SELECT movement_id, amount_usdc FROM swaps ORDER BY created_at LIMIT 1`.execute(h.env.app.db);
    const result = await h.env.app.clickhouse.client.query({
      query: `SELECT status, ledger_amount, chain_amount FROM ${h.env.app.clickhouse.table('reconciliation')} FINAL
               WHERE movement_id = {id:UUID}`,
      query_params: { id: one[0]!.movement_id },
      format: 'JSONEachRow',
    });
    expect(await result.json()).toEqual([
      {
        status: 'matched',
        ledger_amount: one[0]!.amount_usdc.toString(),
        chain_amount: one[0]!.amount_usdc.toString(),
      },
    ]);
  });

  test('a swap whose native leg the ledger misstates is not matched', async () => {
    // Tamper with one swap's native pool leg in the ledger (the chain moved the true amount).
    const { rows } = await sql<{ movement_id: string; id: string }>`
      SELECT s.movement_id, c.id FROM swaps s JOIN chain_transactions c ON c.movement_id = s.movement_id
       ORDER BY s.created_at LIMIT 1`.execute(h.env.app.db);
    const target = rows[0]!;
    await h.env.app.db.transaction().execute(async (trx) => {
      await sql`ALTER TABLE ledger_legs DISABLE TRIGGER ledger_legs_balanced`.execute(trx);
      await sql`
        UPDATE ledger_legs l SET amount = l.amount + 1
          FROM ledger_accounts a
         WHERE a.id = l.ledger_account_id AND l.movement_id = ${target.movement_id}::uuid
           AND a.currency = 'native' AND a.kind = 'user'`.execute(trx);
      await sql`ALTER TABLE ledger_legs ENABLE TRIGGER ledger_legs_balanced`.execute(trx);
    });
    await reconcileRound(h.env.app, {
      missingAfterMs: 600_000,
      finalizedRecheckMs: 0,
      limit: 1_000,
      since: new Date(0),
    });
    const row = await h.env.app.db
      .selectFrom('chain_transactions')
      .select('reconciled_status')
      .where('id', '=', target.id)
      .executeTakeFirstOrThrow();
    expect(row.reconciled_status).toBe('amount_mismatch');
  });
});
