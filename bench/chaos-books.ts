import { Redis } from 'ioredis';
import { sql } from 'kysely';
import type { Db } from '../src/adapters/postgres/db.js';
import type { PlatformChain, RpcClient } from '../src/adapters/solana/index.js';
import type { LedgerStore } from '../src/domain/ledger/ledger-store.port.js';
import { onChainUsdc } from '../test/support/balances.js';
import { expectedBalances, legBalance, type Charge } from '../test/support/books.js';
import { waitForPayments } from '../test/support/settled.js';
import type { Member } from './funded-accounts.js';
import { pollUntil } from './clock.js';

/**
 * The end-of-run checks of the chaos run: the books close after every fault. Each check answers
 * PASS or FAIL with the evidence in one line. Postgres and Redis are read directly; ClickHouse
 * (chdb lives inside the service) through the service's GraphQL finance queries.
 */
export interface Check {
  name: string;
  pass: boolean;
  detail: string;
}

/** A paid write the client sent, with its final answer (undefined: none before the run ended). */
export interface PaidWrite {
  idempotencyKey: string;
  kind: 'post' | 'reply' | 'repost' | 'send';
  who: Member;
  debitMicro: bigint;
  credit?: { to: Member; micro: bigint };
  final?: { status: number; signature?: string };
  /** The kind of each attempt, for the report of a write left without a final answer. */
  attempts?: string[];
}

export interface BookDeps {
  db: Db;
  rpc: RpcClient;
  ledger: LedgerStore;
  platform: PlatformChain;
  redisUrl: string;
  redisPrefix: string;
  gql: (query: string, variables: Record<string, unknown>) => Promise<{ data?: unknown; errors?: unknown[] }>;
}

export async function closeBooks(
  deps: BookDeps,
  members: Member[],
  fundedMicro: bigint,
  writes: PaidWrite[],
  runStartedAt: Date,
): Promise<Check[]> {
  const checks: Check[] = [];
  const unanswered = writes.filter((w) => !w.final);
  checks.push({
    name: 'every paid write got a final answer',
    pass: unanswered.length === 0,
    detail:
      `${writes.length} keys, ${unanswered.length} without a final answer` +
      unanswered
        .slice(0, 3)
        .map((w) => `; ${w.kind} ${w.idempotencyKey}: ${tally(w.attempts ?? ['never sent'])}`)
        .join(''),
  });

  const open = await waitForPayments(deps.db, 120_000, 500);
  // Then finality: every confirmed payment must reach finalized (the worker's finality follower),
  // or be sent again and get there, when the chain lost it in a crash.
  const unfinal = await waitForFinality(deps.db, 120_000);
  const acknowledged = writes.filter((w) => w.final && w.final.status < 300);
  const signatures = acknowledged.map((w) => w.final!.signature ?? `missing swap_tx (${w.idempotencyKey})`);
  const outbox = await deps.db
    .selectFrom('chain_transactions')
    .select(['signature', 'status', 'replaced_signatures'])
    .execute();
  const byStatus = new Map<string, number>();
  for (const row of outbox) byStatus.set(row.status, (byStatus.get(row.status) ?? 0) + 1);
  // A payment re-signed after a crash lost it answers under its first signature: either names it.
  const rowOf = new Map<string, (typeof outbox)[number]>();
  for (const row of outbox) for (const s of [row.signature, ...row.replaced_signatures]) rowOf.set(s, row);
  const settled = (s: string) => ['confirmed', 'finalized'].includes(rowOf.get(s)?.status ?? '');
  const notConfirmed = signatures.filter((s) => !settled(s));
  const acknowledgedSet = new Set(signatures);
  const acknowledgedRows = new Set(signatures.map((s) => rowOf.get(s)).filter((row) => row !== undefined));
  const chargedUntold = outbox.filter((row) => !acknowledgedRows.has(row));
  checks.push({
    name: 'every acknowledged paid write is confirmed on chain, once',
    pass:
      open === 0 &&
      notConfirmed.length === 0 &&
      acknowledgedSet.size === signatures.length &&
      acknowledgedRows.size === signatures.length,
    detail:
      `${signatures.length} acknowledged, ${acknowledgedSet.size} distinct swap_tx, ${notConfirmed.length} not confirmed` +
      `; outbox ${JSON.stringify(Object.fromEntries(byStatus))}` +
      (notConfirmed.length ? `; e.g. ${notConfirmed.slice(0, 3).join(', ')}` : ''),
  });
  checks.push({
    name: 'nothing charged that the client was not told of (outbox = acknowledged)',
    pass: chargedUntold.length === 0 && outbox.length === acknowledgedRows.size,
    detail: `${outbox.length} outbox rows, ${chargedUntold.length} not acknowledged to any client`,
  });
  checks.push(await finalOnChain(deps, outbox, unfinal));

  // Balances: funding minus what the acknowledged writes moved, in the ledger and on chain. A
  // refused write moved nothing, or this would not add up.
  const charges: Charge<Member>[] = acknowledged.map((w) => ({
    who: w.who,
    debitMicro: w.debitMicro,
    ...(w.credit ? { credit: w.credit } : {}),
  }));
  const expected = expectedBalances(new Map(members.map((m) => [m, fundedMicro])), charges);
  const mismatches: string[] = [];
  for (const m of members) {
    const money = await deps.ledger.money(m.account.id);
    const chain = await onChainUsdc(deps, deps.platform, m.account.walletAddress);
    const want = expected.get(m)!;
    if (money.availableMicro !== want || money.pendingMicro !== 0n || chain !== want) {
      mismatches.push(
        `${m.account.handle}: expected ${want}, ledger ${money.availableMicro} (+${money.pendingMicro} pending), chain ${chain}`,
      );
    }
  }
  checks.push({
    name: 'per account: ledger = chain = funding - acknowledged charges',
    pass: mismatches.length === 0,
    detail: mismatches.length ? mismatches.join('; ') : `${members.length} accounts agree`,
  });
  const legs = await legBalance(deps.db);
  checks.push({
    name: 'every ledger movement balances',
    pass: legs.total === '0' && legs.unbalanced.length === 0,
    detail: `sum of legs ${legs.total}, ${legs.unbalanced.length} unbalanced movements`,
  });

  checks.push(await reconciled(deps, outbox.length, runStartedAt));
  checks.push(await earningsShipped(deps, members, runStartedAt));
  checks.push(await queuesClean(deps));
  return checks;
}

/** Polls until no outbox row is 'confirmed' (all finalized or failed); how many were left at the deadline. */
async function waitForFinality(db: Db, timeoutMs: number): Promise<number> {
  const unfinal = async () => {
    const { n } = await db
      .selectFrom('chain_transactions')
      .select(db.fn.countAll<string>().as('n'))
      .where('status', 'in', ['signed', 'sent', 'confirmed'])
      .executeTakeFirstOrThrow();
    return Number(n);
  };
  return (await pollUntil(unfinal, (n) => n === 0, { everyMs: 1_000, limitMs: timeoutMs })).value;
}

/**
 * Every payment ended final: `finalized` in the outbox and finalized on chain under its current
 * signature, or `failed` (and then reversed: the balance check holds that).
 */
async function finalOnChain(
  deps: BookDeps,
  outbox: Array<{ signature: string; status: string }>,
  unfinal: number,
): Promise<Check> {
  const finalized = outbox.filter((row) => row.status === 'finalized').map((row) => row.signature);
  const failed = outbox.filter((row) => row.status === 'failed').length;
  const statuses = await deps.rpc.getSignatureStatuses(finalized, { searchTransactionHistory: true });
  const notFinalOnChain = finalized.filter((_, i) => statuses[i]?.confirmationStatus !== 'finalized');
  return {
    name: 'every payment ends finalized on chain, or failed and reversed',
    pass: unfinal === 0 && notFinalOnChain.length === 0 && finalized.length + failed === outbox.length,
    detail:
      `${finalized.length} finalized, ${failed} failed, ${unfinal} not final after 120 s` +
      `; ${notFinalOnChain.length} finalized in the outbox but not on chain` +
      (notFinalOnChain.length ? ` (e.g. ${notFinalOnChain.slice(0, 3).join(', ')})` : ''),
  };
}

/** "busy x23, dropped x9": how a key's attempts went. */
function tally(kinds: string[]): string {
  const counts = new Map<string, number>();
  for (const kind of kinds) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return [...counts].map(([kind, n]) => `${kind} x${n}`).join(', ');
}

const day = (date: Date) => date.toISOString().slice(0, 10);

/** Every outbox row's verdict is matched (ClickHouse, through GraphQL); waits for the indexer. */
async function reconciled(deps: BookDeps, outboxCount: number, since: Date): Promise<Check> {
  const query = `query ($from: String!, $to: String!) { reconciliationSummary(from: $from, to: $to) {
    day matched exceptions { amountMismatch wrongParty failedOnChain missing pending unexplained } } }`;
  const read = async () => {
    const answer = await deps.gql(query, { from: day(since), to: day(new Date()) }).catch((e: Error) => ({
      errors: [e.message],
      data: undefined,
    }));
    const days =
      (
        answer.data as {
          reconciliationSummary?: Array<{ matched: number; exceptions: Record<string, number> }>;
        }
      )?.reconciliationSummary ?? [];
    const matched = days.reduce((sum, d) => sum + d.matched, 0);
    const exceptions: Record<string, number> = {};
    for (const d of days)
      for (const [k, v] of Object.entries(d.exceptions)) exceptions[k] = (exceptions[k] ?? 0) + v;
    const bad = Object.values(exceptions).reduce((a, b) => a + b, 0);
    const detail = answer.errors
      ? `GraphQL errors: ${JSON.stringify(answer.errors).slice(0, 300)}`
      : `${matched} of ${outboxCount} outbox rows matched; exceptions ${JSON.stringify(exceptions)}`;
    return { name: RECONCILED, pass: !answer.errors && matched === outboxCount && bad === 0, detail };
  };
  return (await pollUntil(read, (check) => check.pass, { everyMs: 2_000, limitMs: 90_000 })).value;
}
const RECONCILED = 'every outbox row reconciles matched (ClickHouse)';

/** ClickHouse earnings per creator equal the ledger's earned USDC legs; waits for the shipper. */
async function earningsShipped(deps: BookDeps, members: Member[], since: Date): Promise<Check> {
  const name = 'ClickHouse earnings = ledger earned legs, per creator';
  const { rows } = await sql<{ account_id: string; earned: string }>`
    SELECT a.account_id, sum(l.amount)::text AS earned
      FROM ledger_legs l JOIN ledger_accounts a ON a.id = l.ledger_account_id
     WHERE l.counts = 'earned' AND a.kind = 'user' AND a.currency = 'usdc'
     GROUP BY a.account_id`.execute(deps.db);
  const ledger = new Map(rows.map((r) => [r.account_id, BigInt(r.earned)]));
  const query = `query ($handle: String!, $from: DateTime!, $to: DateTime!) {
    creatorEarnings(handle: $handle, from: $from, to: $to, granularity: DAY) { amountUsdMicro } }`;
  const from = new Date(since.getTime() - 3_600_000).toISOString();
  const read = async (): Promise<Check> => {
    const differences: string[] = [];
    for (const m of members) {
      const to = new Date(Date.now() + 3_600_000).toISOString();
      const answer = await deps
        .gql(query, { handle: m.account.handle, from, to })
        .catch((e: Error) => ({ errors: [e.message], data: undefined }));
      const buckets =
        (answer.data as { creatorEarnings?: Array<{ amountUsdMicro: string }> })?.creatorEarnings ?? [];
      const clickhouse = buckets.reduce((sum, b) => sum + BigInt(b.amountUsdMicro), 0n);
      const want = ledger.get(m.account.id) ?? 0n;
      if (answer.errors)
        differences.push(`${m.account.handle}: ${JSON.stringify(answer.errors).slice(0, 200)}`);
      else if (clickhouse !== want)
        differences.push(`${m.account.handle}: ClickHouse ${clickhouse}, ledger ${want}`);
    }
    if (differences.length > 0) return { name, pass: false, detail: differences.join('; ') };
    const total = [...ledger.values()].reduce((a, b) => a + b, 0n);
    return { name, pass: true, detail: `${members.length} creators agree (${total} micro-USD earned)` };
  };
  return (await pollUntil(read, (check) => check.pass, { everyMs: 2_000, limitMs: 60_000 })).value;
}

/** No BullMQ job left failed, nor delayed (job schedulers' next runs aside), in any queue. */
async function queuesClean(deps: BookDeps): Promise<Check> {
  const name = 'no BullMQ job failed or delayed after the run';
  const redis = new Redis(deps.redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
  redis.on('error', () => {});
  try {
    await redis.connect();
    const found: string[] = [];
    for (const state of ['failed', 'delayed'] as const) {
      const keys = await redis.keys(`${deps.redisPrefix}:*:${state}`);
      for (const key of keys) {
        const ids = (await redis.zrange(key, '0', '-1')).filter((id) => !id.startsWith('repeat:'));
        for (const id of ids.slice(0, 5)) {
          const jobKey = `${key.slice(0, -state.length)}${id}`;
          const reason = await redis.hget(jobKey, 'failedReason');
          found.push(`${key} ${id}${reason ? ` (${reason.slice(0, 160)})` : ''}`);
        }
        if (ids.length > 5) found.push(`${key}: ${ids.length - 5} more`);
      }
    }
    return { name, pass: found.length === 0, detail: found.length ? found.join('; ') : 'none' };
  } catch (error) {
    return { name, pass: false, detail: `Redis: ${(error as Error).message}` };
  } finally {
    redis.disconnect();
  }
}
