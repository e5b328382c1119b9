import { randomBytes } from 'node:crypto';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { PublicKey } from '@solana/web3.js';
import bs58 from 'bs58';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { associatedTokenAccount, type PlatformChain, type Signer } from '../src/adapters/solana/index.js';
import {
  createBlockFollower,
  nothingDone,
  type BlockFollower,
  type FollowStep,
} from '../src/app/indexer/block-follower.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import type { Account } from '../src/domain/accounts/account.js';
import { checkBalances } from '../src/app/indexer/balance-check.js';
import { reconcileRound } from '../src/app/indexer/reconciler.js';
import { commitPost } from '../src/app/write-path/create-post.js';
import { settlePayment } from '../src/app/write-path/settle-payment.js';
import { fundedAccount } from './support/deposit.js';
import { outsideDeposit, outsideTransfer, outsideWallet } from './support/outside-deposit.js';
import { killChild, startRoleChild } from './support/role-child.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';
import { until } from './support/until.js';

/**
 * The block follower against the real localnet (100 ms slots, confirmed 1 and finalized 32 slots
 * behind), each fault scripted with the localnet's `localnet_blockFaults`: deposits into some of
 * many followed accounts are credited once at confirmed (held in `pending`) and spendable once
 * their block is finalized, through skipped slots, -32004 answers, a fork that drops a credited
 * deposit (reversed, never spendable; the same transaction landing again on the new branch and a
 * new one are credited once each), a SIGKILL of the indexer in the middle of a block's commit, and
 * history pruned past the cursor (the per-address sweep runs once).
 */
let env: TestEnv;
let platform: PlatformChain;
let follower: BlockFollower;
let outsider: Signer;
const users: Account[] = [];
/** Every deposit sent to a user, to check the books at the end. */
const sent: Array<{ signature: string; accountId: string; micro: bigint }> = [];
const children: ChildProcessWithoutNullStreams[] = [];

/** Followed token accounts that are not on chain (accounts of ours nobody deposits to). */
const QUIET_ACCOUNTS = 20_000;

beforeAll(async () => {
  env = await openTestEnv({}, { chain: true });
  platform = await env.app.bootstrapChain();
  follower = createBlockFollower({ ...env.app, logger: pino({ level: 'silent' }) });
  for (let i = 0; i < 6; i++) users.push(await createAccount(env.app, { handle: `bf_user_${i}` }));
  // The quiet token accounts belong to an account of their own that never holds money (its wallet
  // as their owner), so the daily comparison at the end finds each as empty as its ledger.
  const quiet = await createAccount(env.app, { handle: 'bf_quiet' });
  // Many followed accounts: rows as the follower derives them, for addresses nobody uses.
  await sql`
    INSERT INTO followed_token_accounts (token_account, owner, mint, account_id)
    SELECT * FROM unnest(${Array.from({ length: QUIET_ACCOUNTS }, () => bs58.encode(randomBytes(32)))}::text[],
                         array_fill(${quiet.walletAddress}::text, ARRAY[${QUIET_ACCOUNTS}::int]),
                         array_fill(${platform.usdcMint.toBase58()}::text, ARRAY[${QUIET_ACCOUNTS}::int]),
                         array_fill(${quiet.id}::uuid, ARRAY[${QUIET_ACCOUNTS}::int]))`.execute(env.app.db);
  outsider = await outsideWallet(env.app.rpc, platform, 1_000_000_000n);
  await catchUp();
}, 120_000);
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await env?.close();
});

/** Rounds until the follower has passed every confirmed block (what it did, summed). */
async function catchUp(): Promise<FollowStep & { stops: string[] }> {
  const total: FollowStep & { stops: string[] } = { ...nothingDone(), stops: [] };
  for (let i = 0; i < 400; i++) {
    const round = await follower.step();
    total.blocks += round.blocks;
    total.deposits += round.deposits;
    total.finalized += round.finalized;
    total.reversed += round.reversed;
    total.unexplained += round.unexplained;
    total.fork ||= round.fork;
    if (round.sweep) total.sweep = round.sweep;
    if (round.stoppedBy) total.stops.push(round.stoppedBy);
    if (!round.more && !round.stoppedBy) return total;
    if (round.stoppedBy) await sleep(20);
  }
  throw new Error('the follower did not catch up in 400 rounds');
}

async function faults(settings: Record<string, number>): Promise<Record<string, unknown>> {
  const response = await fetch(env.localnet!.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'localnet_blockFaults', params: [settings] }),
  });
  const body = (await response.json()) as { result?: Record<string, unknown>; error?: { message: string } };
  if (body.error) throw new Error(body.error.message);
  return body.result!;
}

async function deposit(user: Account, micro: bigint): Promise<{ signature: string; slot: number }> {
  const landed = await outsideDeposit(env.app.rpc, platform, outsider, user.walletAddress, micro);
  sent.push({ signature: landed.signature, accountId: user.id, micro });
  return landed;
}

const money = (accountId: string) => env.app.ledger.money(accountId);
const slotAt = (commitment: 'processed' | 'finalized') =>
  env.app.rpc.call<number>('getSlot', [{ commitment }]);

/** Live credits and deposit movements of one signature. */
async function creditsOf(signature: string) {
  const { rows } = await sql<{ status: string; n: number }>`
    SELECT status, count(*)::int AS n FROM deposit_credits WHERE signature = ${signature} GROUP BY status`.execute(
    env.app.db,
  );
  return Object.fromEntries(rows.map((row) => [row.status, row.n]));
}

async function depositMovements(signature: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM ledger_movements
     WHERE kind = 'deposit' AND (idempotency_key = ${`deposit:${signature}`} OR idempotency_key LIKE ${`deposit:${signature}:%`})`.execute(
    env.app.db,
  );
  return rows[0]!.n;
}

/** Steps until every deposit sent so far is finalized (spendable). */
async function finalizeAll(): Promise<void> {
  await until(
    'every deposit finalized',
    async () => {
      await catchUp();
      const { rows } = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM deposit_credits WHERE status = 'confirmed'`.execute(env.app.db);
      return rows[0]!.n;
    },
    (n) => n === 0,
    30_000,
  );
}

describe('block follower', () => {
  test('a deposit into one of many followed accounts is held at confirmed, spendable once finalized, credited once', async () => {
    const user = users[2]!;
    const { signature } = await deposit(user, 2_500_000n);
    await until(
      'the deposit credited',
      async () => (await catchUp()).deposits,
      (n) => n === 1,
      10_000,
    );
    expect(await money(user.id)).toMatchObject({ pendingMicro: 2_500_000n, availableMicro: 0n });
    const history = await env.app.db
      .selectFrom('deposit_transactions')
      .select(['status'])
      .where('signature', '=', signature)
      .executeTakeFirstOrThrow();
    expect(history.status).toBe('confirmed');

    await finalizeAll();
    expect(await money(user.id)).toMatchObject({ pendingMicro: 0n, availableMicro: 2_500_000n });
    const settled = await env.app.db
      .selectFrom('deposit_transactions')
      .select(['status'])
      .where('signature', '=', signature)
      .executeTakeFirstOrThrow();
    expect(settled.status).toBe('finalized');
    for (const other of [0, 1, 3, 4, 5]) expect((await money(users[other]!.id)).availableMicro).toBe(0n);

    // Read again from before the deposit's block (as a follower whose cursor commit was lost would,
    // here a fresh one on a cursor moved back): the credit is keyed by signature and token account,
    // nothing is credited twice.
    const { rows: back } = await sql<{ slot: bigint; blockhash: string }>`
      SELECT slot, blockhash FROM followed_blocks
       WHERE slot < (SELECT slot FROM deposit_credits WHERE signature = ${signature})
       ORDER BY slot DESC LIMIT 1`.execute(env.app.db);
    await sql`UPDATE block_follower_cursor SET slot = ${back[0]!.slot}, blockhash = ${back[0]!.blockhash}`.execute(
      env.app.db,
    );
    follower = createBlockFollower({ ...env.app, logger: pino({ level: 'silent' }) });
    const reread = await catchUp();
    expect(reread.blocks).toBeGreaterThan(0);
    expect(reread.deposits).toBe(0);
    expect(await creditsOf(signature)).toEqual({ finalized: 1 });
    expect(await depositMovements(signature)).toBe(1);
  }, 60_000);

  test('skipped slots and -32004 answers: every deposit is credited once, no block stepped over', async () => {
    const { rows: before } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM followed_blocks`.execute(
      env.app.db,
    );
    await faults({ unavailableReads: 2 });
    try {
      const landed = [];
      for (const [i, user] of users.slice(0, 4).entries()) {
        await faults({ skipSlots: 3 });
        landed.push(await deposit(user, BigInt(100_000 * (i + 1))));
      }
      const round = await catchUp();
      expect(round.stops).toContain('unavailable');
      expect(round.deposits).toBe(4);
      for (const { signature } of landed) expect(await creditsOf(signature)).toEqual({ confirmed: 1 });
    } finally {
      await faults({ unavailableReads: 0 });
    }
    // The gaps the skipped slots left were accepted (a parent several slots back), not skipped over.
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM followed_blocks WHERE parent_slot < slot - 1`.execute(env.app.db);
    expect(rows[0]!.n).toBeGreaterThanOrEqual(1);
    expect(before[0]!.n).toBeGreaterThan(0);
    await finalizeAll();
  }, 90_000);

  test('a fork drops a credited deposit: reversed before it was spendable; the new branch is credited once', async () => {
    const [x, y] = [users[4]!, users[5]!];
    const xBefore = await money(x.id);
    // Signed on a blockhash ten slots older than the block it lands in, so that the fork below (which
    // drops the deposit's block and a few after it) keeps the blockhash's block: the transaction can
    // land again on the new branch, as a leader re-including it would.
    const transfer = await outsideTransfer(env.app.rpc, platform, outsider, x.walletAddress, 700_000n);
    await sleep(1_000);
    const { slot } = await transfer.send();
    await until(
      'the deposit credited',
      async () => (await catchUp()).deposits,
      (n) => n === 1,
      10_000,
    );
    expect((await money(x.id)).pendingMicro).toBe(xBefore.pendingMicro + 700_000n);

    // Drop every block from the deposit's on (it is far from finalized: 32 slots of 100 ms).
    const depth = (await slotAt('processed')) - slot + 3;
    expect(depth).toBeLessThan(30);
    await faults({ fork: depth });
    // The fork shows once a block of the new branch follows the cursor's slot.
    let reversed = 0;
    await until(
      'the fork walked back',
      async () => {
        const round = await catchUp();
        reversed += round.reversed;
        return round.fork;
      },
      (fork) => fork,
      10_000,
    );
    expect(reversed).toBe(1);
    expect(await money(x.id)).toMatchObject(xBefore);
    expect(await creditsOf(transfer.signature)).toEqual({ reversed: 1 });
    const history = await env.app.db
      .selectFrom('deposit_transactions')
      .select('status')
      .where('signature', '=', transfer.signature)
      .execute();
    expect(history.map((h) => h.status)).toEqual(['reversed']);

    // The same transaction lands again on the new branch (as a leader re-includes it), and a new one.
    await transfer.send();
    sent.push({ signature: transfer.signature, accountId: x.id, micro: 700_000n });
    await deposit(y, 300_000n);
    await until(
      'both credited',
      async () => (await catchUp()).deposits,
      (n) => n === 2,
      10_000,
    );
    expect(await creditsOf(transfer.signature)).toEqual({ reversed: 1, confirmed: 1 });
    expect(await depositMovements(transfer.signature)).toBe(2); // the reversed landing and the new one

    await finalizeAll();
    expect((await money(x.id)).availableMicro).toBe(xBefore.availableMicro + xBefore.pendingMicro + 700_000n);
  }, 90_000);

  test('the indexer SIGKILLed in the middle of a block commit, then restarted: credited once', async () => {
    // A follower in a real indexer process; its commit is held inside the deposit_credits insert
    // (a trigger of this test's database) so the kill lands after the deposit movement was written
    // and before the cursor moved.
    await sql`CREATE FUNCTION slow_credit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_sleep(3); RETURN NEW; END $$`.execute(env.app.db);
    await sql`CREATE TRIGGER slow_credit BEFORE INSERT ON deposit_credits
      FOR EACH ROW EXECUTE FUNCTION slow_credit()`.execute(env.app.db);
    let child = await startRoleChild(env, 'indexer', children);
    const user = users[1]!;
    const before = await money(user.id);
    const { signature } = await deposit(user, 450_000n);
    const backend = await until(
      'the indexer inside the credit insert',
      async () => {
        const { rows } = await sql<{ pid: number }>`
          SELECT pid FROM pg_stat_activity
           WHERE datname = current_database() AND pid <> pg_backend_pid()
             AND query LIKE '%INSERT INTO deposit_credits%' AND state = 'active'`.execute(env.app.db);
        return rows[0]?.pid;
      },
      (pid) => pid !== undefined,
      20_000,
    );
    await killChild(child);
    // Its backend ends its sleep, finds the client gone and rolls the transaction back.
    await until(
      'the killed transaction rolled back',
      async () => {
        const { rows } = await sql<{ n: number }>`
          SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ${backend!}`.execute(env.app.db);
        return rows[0]!.n;
      },
      (n) => n === 0,
      40_000,
    );
    await sql`DROP TRIGGER slow_credit ON deposit_credits`.execute(env.app.db);
    expect(await depositMovements(signature)).toBe(0);

    child = await startRoleChild(env, 'indexer', children);
    await until(
      'credited by the restarted indexer',
      () => depositMovements(signature),
      (n) => n === 1,
      20_000,
    );
    await killChild(child);
    // One live credit (the restarted indexer may have finalized it already), none reversed.
    const credits = await creditsOf(signature);
    expect(Object.keys(credits)).toHaveLength(1);
    expect((credits.confirmed ?? 0) + (credits.finalized ?? 0)).toBe(1);
    const after = await money(user.id);
    expect(after.pendingMicro + after.availableMicro).toBe(
      before.pendingMicro + before.availableMicro + 450_000n,
    );
    await catchUp();
    expect(await depositMovements(signature)).toBe(1);
    await finalizeAll();
  }, 150_000);

  test('history pruned past the cursor: the per-address sweep runs once, the deposit is credited once', async () => {
    await catchUp();
    const user = users[3]!;
    const before = await money(user.id);
    const { signature, slot } = await deposit(user, 640_000n);
    // The follower is not running while the node prunes its history past the deposit's block.
    const finalized = await until(
      'the deposit finalized on chain',
      () => slotAt('finalized'),
      (s) => s > slot + 2,
      20_000,
    );
    await faults({ pruneBelow: finalized });
    const sweeps = () =>
      env.app.metrics.followerSweeps
        .get()
        .then((m) => m.values.find((v) => v.labels.reason === 'pruned')?.value ?? 0);
    const sweepsBefore = await sweeps();
    const round = await catchUp();
    expect(round.sweep).toBe('pruned');
    expect((await sweeps()) - sweepsBefore).toBe(1);
    expect(await depositMovements(signature)).toBe(1);
    // The sweep credits what it finds spendable: its blocks were finalized before they were pruned.
    expect((await money(user.id)).availableMicro).toBe(before.availableMicro + 640_000n);
    const again = await catchUp();
    expect(again.sweep).toBeUndefined();
    expect(await depositMovements(signature)).toBe(1);
  }, 90_000);

  test('the reconciler judges a payment the follower saw from its block: no getTransaction', async () => {
    const author = await fundedAccount(env.app, platform, 'bf_author', 5_000_000n);
    const post = await commitPost(env.app, author.id, { type: 'post', content: 'seen in a block' });
    expect(await settlePayment(env.app, post.chainTransactionId)).toBe('confirmed');
    await until(
      'the payment seen in a followed block',
      async () => {
        await catchUp();
        const { rows } = await sql<{ n: number }>`
          SELECT count(*)::int AS n FROM followed_transactions WHERE signature = ${post.swapTx}`.execute(
          env.app.db,
        );
        return rows[0]!.n;
      },
      (n) => n === 1,
      10_000,
    );
    // Not a deposit, not unexplained: the author's money is as the ledger says.
    expect((await money(author.id)).availableMicro).toBe(4_000_000n);

    const methods: string[] = [];
    const rpc = {
      ...env.app.rpc,
      call: <T>(method: string, params: readonly unknown[]) => (
        methods.push(method),
        env.app.rpc.call<T>(method, params)
      ),
      batch: <T>(calls: Parameters<typeof env.app.rpc.batch>[0]) => (
        methods.push(...calls.map((c) => c.method)),
        env.app.rpc.batch<T>(calls)
      ),
    };
    const round = await reconcileRound(
      { ...env.app, rpc },
      { missingAfterMs: 60_000, settlingGraceMs: 0, finalizedRecheckMs: 0 },
    );
    expect(round.byStatus).toEqual({ matched: round.checked });
    expect(round.checked).toBeGreaterThanOrEqual(1);
    expect(methods).not.toContain('getTransaction');

    // At finalized: one getBlock for the payment's slot proves its block is the finalized one.
    methods.length = 0;
    const { rows } = await sql<{ slot: bigint }>`
      SELECT slot FROM followed_transactions WHERE signature = ${post.swapTx}`.execute(env.app.db);
    await until(
      'the payment finalized on chain',
      () => slotAt('finalized'),
      (s) => s >= Number(rows[0]!.slot),
      20_000,
    );
    const finalRound = await reconcileRound(
      { ...env.app, rpc },
      { missingAfterMs: 60_000, settlingGraceMs: 0, finalizedRecheckMs: 0 },
    );
    expect(finalRound.byStatus.matched).toBeGreaterThanOrEqual(1);
    expect(methods.filter((m) => m === 'getTransaction')).toHaveLength(0);
    expect(methods).toContain('getBlock');
  }, 60_000);

  test("the indexer's reconciler waits for the follower to read a payment's block, unless the follower stopped moving", async () => {
    const author = await fundedAccount(env.app, platform, 'bf_waiter', 5_000_000n);
    await catchUp(); // the cursor moved just now, before the payment's block
    const post = await commitPost(env.app, author.id, { type: 'post', content: 'past the cursor' });
    expect(await settlePayment(env.app, post.chainTransactionId)).toBe('confirmed');
    const fetched: string[] = [];
    const rpc = {
      ...env.app.rpc,
      batch: <T>(calls: Parameters<typeof env.app.rpc.batch>[0]) => {
        for (const c of calls) if (c.method === 'getTransaction') fetched.push(String(c.params[0]));
        return env.app.rpc.batch<T>(calls);
      },
    };
    const options = { missingAfterMs: 60_000, settlingGraceMs: 0, followerFreshMs: 10_000 };
    const judged = async (id: string) =>
      await env.app.db
        .selectFrom('chain_transactions')
        .select(['reconciled_commitment', 'reconciled_status'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();

    // Its slot is past the follower's cursor: not claimed, not fetched.
    await reconcileRound({ ...env.app, rpc }, options);
    expect(await judged(post.chainTransactionId)).toEqual({
      reconciled_commitment: null,
      reconciled_status: null,
    });
    expect(fetched).not.toContain(post.swapTx);

    // The follower reads its block: the next round judges it from there.
    await catchUp();
    await reconcileRound({ ...env.app, rpc }, options);
    expect(await judged(post.chainTransactionId)).toEqual({
      reconciled_commitment: 'confirmed',
      reconciled_status: 'matched',
    });
    expect(fetched).not.toContain(post.swapTx);

    // A follower whose cursor stopped moving holds nothing back: the round fetches the payment.
    const stuck = await commitPost(env.app, author.id, { type: 'post', content: 'no follower' });
    expect(await settlePayment(env.app, stuck.chainTransactionId)).toBe('confirmed');
    await sql`UPDATE block_follower_cursor SET updated_at = now() - interval '1 minute'`.execute(env.app.db);
    await reconcileRound({ ...env.app, rpc }, options);
    expect(await judged(stuck.chainTransactionId)).toEqual({
      reconciled_commitment: 'confirmed',
      reconciled_status: 'matched',
    });
    expect(fetched).toContain(stuck.swapTx);
    await catchUp();
  }, 60_000);

  test('the books: every deposit sent is credited exactly once and spendable, none missed', async () => {
    await finalizeAll();
    const expected = new Map<string, bigint>();
    for (const { accountId, micro } of sent) expected.set(accountId, (expected.get(accountId) ?? 0n) + micro);
    for (const user of users) {
      expect(await money(user.id)).toMatchObject({
        pendingMicro: 0n,
        availableMicro: expected.get(user.id) ?? 0n,
      });
    }
    // On chain, each user's token account holds exactly what the ledger says.
    for (const user of users) {
      const ata = associatedTokenAccount(platform.usdcMint, new PublicKey(user.walletAddress));
      const balance = await env.app.rpc
        .call<{ value: { amount: string } }>('getTokenAccountBalance', [
          ata.toBase58(),
          { commitment: 'confirmed' },
        ])
        .then((r) => BigInt(r.value.amount))
        .catch(() => 0n);
      expect(balance).toBe(expected.get(user.id) ?? 0n);
    }
    // The daily comparison over every followed token account finds no difference.
    const check = await checkBalances(
      { ...env.app, logger: pino({ level: 'silent' }) },
      { force: true, recheckAfterMs: 0 },
    );
    expect(check.accounts).toBeGreaterThan(QUIET_ACCOUNTS);
    expect(check).toMatchObject({ differed: 0, mismatches: 0 });
  }, 60_000);
});
