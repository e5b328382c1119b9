import { sql, type RawBuilder } from 'kysely';
import type { Db } from './db.js';

/** A followed token account with what the ledger says it holds. */
export interface FollowedBalanceRow {
  seq: bigint;
  tokenAccount: string;
  owner: string;
  mint: string;
  accountId: string;
  handle: string;
  currency: 'usdc' | 'native';
  /** balance + pending of the account's ledger account in that currency; 0 when it has none. */
  ledgerUnits: bigint;
}

/** The two mints a followed token account may hold, as base58. */
export interface CheckedMints {
  usdc: string;
  native: string;
}

/**
 * Takes the day's run: true when this caller is to run it. A day already finished, or started by
 * another process less than `abandonedAfterMs` ago, is not taken unless `force` (a run that died
 * midway leaves its row unfinished; after that long the scheduler takes the day over). Returns the
 * claim's start as text (microseconds: what finish and release compare).
 */
export async function claimBalanceCheck(
  db: Db,
  day: string,
  options: { force: boolean; abandonedAfterMs: number },
): Promise<string | null> {
  const { rows } = await sql<{ started_at: string }>`
    INSERT INTO balance_checks AS b (day) VALUES (${day}::date)
    ON CONFLICT (day) DO UPDATE
       SET started_at = clock_timestamp(), finished_at = NULL, accounts = 0, mismatches = 0
     WHERE ${options.force}::boolean
        OR (b.finished_at IS NULL
            AND b.started_at < clock_timestamp() - make_interval(secs => ${options.abandonedAfterMs / 1000}))
    RETURNING started_at::text AS started_at`.execute(db);
  return rows[0]?.started_at ?? null;
}

/** Records the run's outcome; false when another run took the day over meanwhile. */
export async function finishBalanceCheck(
  db: Db,
  day: string,
  claim: string,
  outcome: { accounts: number; mismatches: number },
): Promise<boolean> {
  const result = await sql`
    UPDATE balance_checks
       SET finished_at = clock_timestamp(), accounts = ${outcome.accounts}, mismatches = ${outcome.mismatches}
     WHERE day = ${day}::date AND started_at = ${claim}::timestamptz`.execute(db);
  return Number(result.numAffectedRows ?? 0n) === 1;
}

/** Gives the day back after a failed or stopped run, so a later attempt runs it. */
export async function releaseBalanceCheck(db: Db, day: string, claim: string): Promise<void> {
  await sql`
    DELETE FROM balance_checks
     WHERE day = ${day}::date AND started_at = ${claim}::timestamptz AND finished_at IS NULL`.execute(db);
}

/**
 * Followed token accounts after `afterSeq` (keyset order), `limit` at a time, with their ledger
 * amounts; `next` is where the next page starts and `done` says there is none. Only token
 * accounts of the account's current wallet and of the two mints are returned: an account's earlier
 * wallet (if it ever changed) or a mint configured away is no longer its money (they still count
 * towards the page, so a page of them does not end the walk early).
 */
export async function followedBalancesAfter(
  db: Db,
  afterSeq: bigint,
  limit: number,
  mints: CheckedMints,
): Promise<{ rows: FollowedBalanceRow[]; next: bigint; done: boolean }> {
  const page = sql`(SELECT * FROM followed_token_accounts WHERE seq > ${afterSeq} ORDER BY seq LIMIT ${limit})`;
  const { rows } = await sql<RawRow>`${selectBalances(mints, page)} ORDER BY f.seq`.execute(db);
  const last = rows.at(-1);
  return {
    rows: rows.filter((row) => row.checked_row).map(toRow),
    next: last ? last.seq : afterSeq,
    done: rows.length < limit,
  };
}

/** The same rows for the given token accounts (the second look at those that differed). */
export async function followedBalancesOf(
  db: Db,
  tokenAccounts: readonly string[],
  mints: CheckedMints,
): Promise<FollowedBalanceRow[]> {
  if (tokenAccounts.length === 0) return [];
  const chosen = sql`(SELECT * FROM followed_token_accounts WHERE token_account = ANY(${[...tokenAccounts]}::text[]))`;
  const { rows } = await sql<RawRow>`${selectBalances(mints, chosen)}`.execute(db);
  return rows.filter((row) => row.checked_row).map(toRow);
}

interface RawRow {
  seq: bigint;
  token_account: string;
  owner: string;
  mint: string;
  account_id: string;
  handle: string;
  currency: 'usdc' | 'native';
  ledger_units: bigint;
  checked_row: boolean;
}

/**
 * `followed` (a row source of followed_token_accounts) with each row's ledger amount and whether it
 * is checked (`checked_row`: of the account's current wallet and one of the two mints).
 */
function selectBalances(mints: CheckedMints, followed: RawBuilder<unknown>) {
  return sql`
    SELECT f.seq, f.token_account, f.owner, f.mint, f.account_id, coalesce(a.handle, '') AS handle, c.currency,
           coalesce(l.balance + l.pending, 0)::bigint AS ledger_units,
           (a.wallet_address IS NOT DISTINCT FROM f.owner AND f.mint IN (${mints.usdc}, ${mints.native})) AS checked_row
      FROM ${followed} f
      LEFT JOIN accounts a ON a.id = f.account_id
     CROSS JOIN LATERAL (SELECT CASE WHEN f.mint = ${mints.usdc} THEN 'usdc' ELSE 'native' END AS currency) c
      LEFT JOIN ledger_accounts l ON l.kind = 'user' AND l.account_id = f.account_id AND l.currency = c.currency`;
}

function toRow(row: RawRow): FollowedBalanceRow {
  return {
    seq: row.seq,
    tokenAccount: row.token_account,
    owner: row.owner,
    mint: row.mint,
    accountId: row.account_id,
    handle: row.handle,
    currency: row.currency,
    ledgerUnits: row.ledger_units,
  };
}
