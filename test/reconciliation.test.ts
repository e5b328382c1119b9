import { PublicKey } from '@solana/web3.js';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createClickHouse } from '../src/adapters/clickhouse/index.js';
import type { PlatformChain } from '../src/adapters/solana/index.js';
import { commitPost } from '../src/app/write-path/create-post.js';
import { settlePayment } from '../src/app/write-path/settle-payment.js';
import { rewindShipper, shipBatch, unshippedCounts } from '../src/app/indexer/event-shipper.js';
import { reconcileRound } from '../src/app/indexer/reconciler.js';
import { drainOnChain, replaceSignedPayment } from './support/chain-tampering.js';
import { fundedAccount } from './support/deposit.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

/**
 * The reconciler against the real localnet: payments made by the write path, and payments whose
 * on-chain transaction was tampered with (another amount, another recipient, never sent, failed),
 * each judged from getTransaction's pre/post token balances against the ledger legs.
 */
let env: TestEnv;
let platform: PlatformChain;

beforeAll(async () => {
  env = await openTestEnv({}, { chain: true });
  platform = await env.app.bootstrapChain();
});
afterAll(async () => {
  await env?.close();
});

const funded = (handle: string, micro: bigint) => fundedAccount(env.app, platform, handle, micro);

/** Everything unreconciled, judged now (no finalized wait, `missing` only when asked). */
const reconcile = (missingAfterMs = 600_000) =>
  reconcileRound(env.app, { missingAfterMs, finalizedRecheckMs: 0, settlingGraceMs: 0, limit: 1_000 });

async function verdictOf(movementId: string) {
  const result = await env.app.clickhouse.client.query({
    query: `SELECT status, ledger_amount, chain_amount, commitment, detail
              FROM ${env.app.clickhouse.table('reconciliation')} FINAL
             WHERE movement_id = {id:UUID}`,
    query_params: { id: movementId },
    format: 'JSONEachRow',
  });
  const rows = await result.json<{
    status: string;
    ledger_amount: string;
    chain_amount: string;
    commitment: string;
    detail: string;
  }>();
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

/** The outbox row's last verdict (Postgres's copy); null while no round has checked it. */
const checkedStatusOf = async (chainTransactionId: string) =>
  (
    await env.app.db
      .selectFrom('chain_transactions')
      .select('reconciled_status')
      .where('id', '=', chainTransactionId)
      .executeTakeFirstOrThrow()
  ).reconciled_status;

const movementOf = async (chainTransactionId: string) =>
  (
    await env.app.db
      .selectFrom('chain_transactions')
      .select(['movement_id', 'reconciled_status', 'reconciled_commitment'])
      .where('id', '=', chainTransactionId)
      .executeTakeFirstOrThrow()
  ).movement_id;

describe('reconciliation', () => {
  test('a normal day reconciles 100% matched, at confirmed and again at finalized', async () => {
    const author = await funded('rc_author', 5_000_000n);
    const fan = await funded('rc_fan', 5_000_000n);
    const parent = await commitPost(env.app, author.id, { type: 'post', content: 'hello' });
    const reply = await commitPost(env.app, fan.id, {
      type: 'reply',
      content: 'hi',
      parentId: parent.id,
    });
    const quote = await commitPost(env.app, fan.id, {
      type: 'quote',
      content: 'look',
      quotedPostId: parent.id,
    });
    for (const p of [parent, reply, quote])
      expect(await settlePayment(env.app, p.chainTransactionId)).toBe('confirmed');

    const first = await reconcile();
    expect(first.byStatus).toEqual({ matched: 3 });
    const verdict = await verdictOf(await movementOf(reply.chainTransactionId));
    expect(verdict).toMatchObject({ status: 'matched', commitment: 'confirmed', ledger_amount: '1000000' });
    expect(verdict.chain_amount).toBe('1000000');

    // The finalized look comes once the slots have passed; then nothing is left to check.
    env.localnet!.chain.warp(40);
    expect((await reconcile()).byStatus).toEqual({ matched: 3 });
    expect((await verdictOf(await movementOf(reply.chainTransactionId))).commitment).toBe('finalized');
    expect((await reconcile()).checked).toBe(0);

    // The token movements of the reply: the fan paid 1, the author and the treasury got 0.5 each.
    const movements = await env.app.clickhouse.client.query({
      query: `SELECT owner, amount FROM ${env.app.clickhouse.table('token_movements')} FINAL
               WHERE signature = {sig:String} ORDER BY amount, owner`,
      query_params: { sig: reply.swapTx },
      format: 'JSONEachRow',
    });
    expect(await movements.json()).toEqual(
      [
        { owner: fan.walletAddress, amount: '-1000000' },
        { owner: author.walletAddress, amount: '500000' },
        { owner: platform.signers.treasury.publicKey.toBase58(), amount: '500000' },
        // As ClickHouse orders them: by amount, then by owner's bytes.
      ].sort((a, b) => Number(BigInt(a.amount) - BigInt(b.amount)) || (a.owner < b.owner ? -1 : 1)),
    );
  });

  test('another amount on chain is amount_mismatch; another recipient is wrong_party', async () => {
    const payer = await funded('rc_payer', 5_000_000n);
    const stranger = await funded('rc_stranger', 1n);
    const short = await commitPost(env.app, payer.id, { type: 'post', content: 'short' });
    await replaceSignedPayment(env.app, platform, short.chainTransactionId, payer, [
      { owner: platform.signers.treasury.publicKey, amountMicro: 900_000n },
    ]);
    const astray = await commitPost(env.app, payer.id, { type: 'post', content: 'astray' });
    await replaceSignedPayment(env.app, platform, astray.chainTransactionId, payer, [
      { owner: new PublicKey(stranger.walletAddress), amountMicro: 1_000_000n },
    ]);
    for (const p of [short, astray])
      expect(await settlePayment(env.app, p.chainTransactionId)).toBe('confirmed');

    await reconcile();
    expect(await verdictOf(await movementOf(short.chainTransactionId))).toMatchObject({
      status: 'amount_mismatch',
      ledger_amount: '1000000',
      chain_amount: '900000',
    });
    const wrong = await verdictOf(await movementOf(astray.chainTransactionId));
    expect(wrong.status).toBe('wrong_party');
    expect(wrong.detail).toContain(stranger.walletAddress);
  });

  test('a signature that never landed becomes missing (pending before the configured time)', async () => {
    const payer = await funded('rc_ghost', 2_000_000n);
    const ghost = await commitPost(env.app, payer.id, { type: 'post', content: 'never sent' });
    const movementId = await movementOf(ghost.chainTransactionId);
    await reconcile(600_000);
    expect((await verdictOf(movementId)).status).toBe('pending');
    await reconcile(0);
    expect(await verdictOf(movementId)).toMatchObject({ status: 'missing', chain_amount: '0' });
  });

  test('a payment the worker is still settling is left to it until the settling grace has passed', async () => {
    const payer = await funded('rc_settling', 2_000_000n);
    const fresh = await commitPost(env.app, payer.id, { type: 'post', content: 'not sent yet' });
    const round = (settlingGraceMs?: number) =>
      reconcileRound(env.app, {
        missingAfterMs: 600_000,
        finalizedRecheckMs: 0,
        limit: 1_000,
        ...(settlingGraceMs === undefined ? {} : { settlingGraceMs }),
      });
    await round(); // the default grace (5 s): the row is seconds old
    expect(await checkedStatusOf(fresh.chainTransactionId)).toBeNull();
    await round(0);
    expect(await checkedStatusOf(fresh.chainTransactionId)).toBe('pending');

    // Once the worker confirmed it, no grace applies.
    const settled = await commitPost(env.app, payer.id, { type: 'post', content: 'settled' });
    expect(await settlePayment(env.app, settled.chainTransactionId)).toBe('confirmed');
    await round();
    expect(await checkedStatusOf(settled.chainTransactionId)).toBe('matched');
  });

  test('rows judged missing, checked every round, do not hold back a newer row behind a full round', async () => {
    await reconcile(); // nothing older is left unchecked
    const payer = await funded('rc_backlog', 5_000_000n);
    const ghosts = [];
    for (let k = 0; k < 3; k++)
      ghosts.push(await commitPost(env.app, payer.id, { type: 'post', content: `ghost ${k}` }));
    await reconcile(0);
    for (const ghost of ghosts) expect(await checkedStatusOf(ghost.chainTransactionId)).toBe('missing');

    const newer = await commitPost(env.app, payer.id, { type: 'post', content: 'newer' });
    expect(await settlePayment(env.app, newer.chainTransactionId)).toBe('confirmed');
    // A round of one row: the row never checked goes first, not the oldest missing one.
    await reconcileRound(env.app, { missingAfterMs: 0, finalizedRecheckMs: 0, settlingGraceMs: 0, limit: 1 });
    expect(await checkedStatusOf(newer.chainTransactionId)).toBe('matched');
  });

  test('a payment that landed with an error (and was reversed) is failed_on_chain, nothing moved', async () => {
    const payer = await funded('rc_failing', 1_000_000n);
    const doomed = await commitPost(env.app, payer.id, { type: 'post', content: 'doomed' });
    await drainOnChain(env.app, platform, payer, 1_000_000n);
    // Sent without preflight, it lands with its error (and its fee), as on a validator.
    const row = await env.app.db
      .selectFrom('chain_transactions')
      .select('wire')
      .where('id', '=', doomed.chainTransactionId)
      .executeTakeFirstOrThrow();
    await env.app.rpc.sendTransaction(row.wire, { skipPreflight: true, preflightCommitment: 'confirmed' });
    expect(await settlePayment(env.app, doomed.chainTransactionId)).toBe('failed');

    await reconcile();
    const verdict = await verdictOf(await movementOf(doomed.chainTransactionId));
    expect(verdict).toMatchObject({ status: 'failed_on_chain', chain_amount: '0', ledger_amount: '0' });
    expect(verdict.detail).toContain('reversed');
  });

  test('earnings in ClickHouse equal the ledger earn legs to the micro-dollar, even when ClickHouse was down', async () => {
    const down = createClickHouse({ kind: 'http', url: 'http://127.0.0.1:9' }, env.app.clickhouse.database);
    await expect(shipBatch({ db: env.app.db, clickhouse: down })).rejects.toThrow();
    await down.close();
    const waiting = await unshippedCounts(env.app.db);
    expect(waiting.events).toBeGreaterThan(0); // the cursor did not move
    expect(waiting.legs).toBeGreaterThan(0);

    for (let round = 0; round < 10; round++) {
      const shipped = await shipBatch(env.app);
      if (shipped.events === 0 && shipped.legs === 0) break;
    }
    expect(await unshippedCounts(env.app.db)).toEqual({ events: 0, legs: 0 });
    // Shipping everything again (a crash after the insert, or `reindex`) changes nothing: rows
    // collapse by id.
    await rewindShipper(env.app.db);
    for (let round = 0; round < 10; round++) {
      const shipped = await shipBatch(env.app);
      if (shipped.events === 0 && shipped.legs === 0) break;
    }

    const { rows: ledger } = await sql<{ account_id: string; earned: string }>`
      SELECT a.account_id, sum(l.amount)::text AS earned
        FROM ledger_legs l JOIN ledger_accounts a ON a.id = l.ledger_account_id
       WHERE l.counts = 'earned' AND a.kind = 'user' AND a.currency = 'usdc'
       GROUP BY a.account_id ORDER BY a.account_id`.execute(env.app.db);
    expect(ledger.length).toBeGreaterThan(0);
    const result = await env.app.clickhouse.client.query({
      query: `SELECT toString(creator_id) AS account_id, toString(sum(amount)) AS earned
                FROM ${env.app.clickhouse.table('creator_earnings')} FINAL
               GROUP BY creator_id ORDER BY account_id`,
      format: 'JSONEachRow',
    });
    expect(await result.json()).toEqual(ledger);

    const { rows: events } = await sql<{ n: string }>`SELECT count(*)::text AS n FROM domain_events`.execute(
      env.app.db,
    );
    const shippedEvents = await env.app.clickhouse.client.query({
      query: `SELECT toString(count()) AS n FROM ${env.app.clickhouse.table('domain_events')} FINAL`,
      format: 'JSONEachRow',
    });
    expect(await shippedEvents.json()).toEqual([{ n: events[0]!.n }]);
  });

  test('a transaction that commits late is shipped, not skipped: the cursor waits for it', async () => {
    const shipAll = async () => {
      for (let round = 0; round < 10; round++) {
        const shipped = await shipBatch(env.app);
        if (shipped.events === 0 && shipped.legs === 0) break;
      }
    };
    const inClickHouse = async (type: string) => {
      const result = await env.app.clickhouse.client.query({
        query: `SELECT toString(count()) AS n FROM ${env.app.clickhouse.table('domain_events')} FINAL
                 WHERE type = {type:String}`,
        query_params: { type },
        format: 'JSONEachRow',
      });
      return Number((await result.json<{ n: string }>())[0]!.n);
    };
    await shipAll();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let inserted!: () => void;
    const insertedEarly = new Promise<void>((resolve) => (inserted = resolve));
    // The slow transaction writes first (the lower transaction id) and commits last.
    const slow = env.app.db.transaction().execute(async (trx) => {
      await trx.insertInto('domain_events').values({ type: 'test.slow' }).execute();
      inserted();
      await gate;
    });
    await insertedEarly;
    await env.app.db.insertInto('domain_events').values({ type: 'test.fast' }).execute();
    await shipAll();
    // The fast one committed, but shipping it would move the cursor past the slow one.
    expect(await inClickHouse('test.fast')).toBe(0);
    release();
    await slow;
    await shipAll();
    expect(await inClickHouse('test.slow')).toBe(1);
    expect(await inClickHouse('test.fast')).toBe(1);
  });

  test('many small batches ship every row once, in order, through the cursor', async () => {
    const before = await env.app.clickhouse.client.query({
      query: `SELECT toString(count()) AS n FROM ${env.app.clickhouse.table('domain_events')} FINAL
               WHERE type = 'test.batch'`,
      format: 'JSONEachRow',
    });
    expect(await before.json()).toEqual([{ n: '0' }]);
    await sql`INSERT INTO domain_events (type, payload)
              SELECT 'test.batch', jsonb_build_object('n', g) FROM generate_series(1, 2500) AS g`.execute(
      env.app.db,
    );
    let shipped = 0;
    for (let round = 0; round < 20; round++) {
      const batch = await shipBatch(env.app, 300);
      shipped += batch.events;
      if (batch.events === 0 && batch.legs === 0) break;
    }
    expect(shipped).toBe(2500);
    expect(await unshippedCounts(env.app.db)).toEqual({ events: 0, legs: 0 });
    const after = await env.app.clickhouse.client.query({
      query: `SELECT toString(count()) AS n, toString(uniqExact(JSONExtractInt(payload, 'n'))) AS distinct_n
                FROM ${env.app.clickhouse.table('domain_events')} WHERE type = 'test.batch'`,
      format: 'JSONEachRow',
    });
    expect(await after.json()).toEqual([{ n: '2500', distinct_n: '2500' }]);
  });

  test('payloads with backslashes, quotes, tabs and newlines arrive in ClickHouse unchanged', async () => {
    const payload = { text: 'back\\slash \t tab "quoted"\nnew line', emoji: '🙂' };
    const row = await env.app.db
      .insertInto('domain_events')
      .values({ type: 'test.escaping', payload: JSON.stringify(payload) })
      .returning('id')
      .executeTakeFirstOrThrow();
    for (let round = 0; round < 10; round++) {
      const shipped = await shipBatch(env.app);
      if (shipped.events === 0 && shipped.legs === 0) break;
    }
    const result = await env.app.clickhouse.client.query({
      query: `SELECT payload FROM ${env.app.clickhouse.table('domain_events')} FINAL WHERE event_id = {id:UUID}`,
      query_params: { id: row.id },
      format: 'JSONEachRow',
    });
    const [shipped] = await result.json<{ payload: string }>();
    expect(JSON.parse(shipped!.payload)).toEqual(payload);
  });
});
