import { STREAM_SETTINGS, type ClickHouse } from '../../adapters/clickhouse/index.js';
import type { Db } from '../../adapters/postgres/db.js';
import {
  paymentStateCountsByDay,
  unfinalizedPayments,
  type UnfinalizedPaymentRow,
} from '../../adapters/postgres/payment-states.repository.js';
import {
  NOT_FINALIZED_AFTER_MS,
  RECONCILIATION_STATUSES,
  type ReconciliationStatus,
} from '../../domain/reconciliation/reconciliation.js';
import { AppError } from '../../domain/errors.js';
import { decodeSignedCursor, encodeSignedCursor } from '../../domain/pagination/signed-cursor.js';

/**
 * What finance and creators read from ClickHouse: daily reconciliation totals, the exception list
 * and one transaction's movements (a creator's earnings: creator-earnings.ts; a post's:
 * post-earnings.ts). Every read uses FINAL (the tables are ReplacingMergeTrees: re-checks and
 * re-shipped rows collapse to one).
 *
 * Finality comes from Postgres instead: the payments by outbox state and the `not_finalized`
 * exceptions are read from chain_transactions when finance asks, not recorded by the reconciler.
 * The outbox is where the state lives (the worker's finality follower moves it), so a read of it
 * is always current: a payment leaves the list the moment it is marked finalized, and one that
 * got stuck appears the moment it turns 5 minutes old, with no process having to look at it
 * then. A verdict written into ClickHouse would be as old as the reconciler's last look (it looks
 * at confirmed, then once at finalized, and never again), would need another round per row at
 * the 5-minute mark, and would replace the row's amount verdict (one latest verdict per movement).
 */

/** A day's outbox payments by their state now. */
export interface PaymentStateCounts {
  /** `signed` or `sent`: not seen confirmed yet (or sent again after it vanished). */
  pending: number;
  confirmed: number;
  finalized: number;
  /** Landed with an error and reversed. */
  failed: number;
}

export interface DaySummary {
  day: string;
  /** Micro-USD the ledger moved that day (sum of credits of reconciled movements). */
  ledgerTotalMicro: bigint;
  /** Micro-USD the chain moved for those movements. */
  chainTotalMicro: bigint;
  matched: number;
  /** Recorded verdicts (ClickHouse) and `not_finalized` (the outbox, now) by status. */
  exceptions: Record<Exclude<ReconciliationStatus, 'matched'>, number>;
  /** The day's payments by outbox state (Postgres, now). */
  payments: PaymentStateCounts;
}

/** Where the finance reads look: ClickHouse for the reconciler's verdicts, Postgres for the outbox. */
export interface FinanceReadDeps {
  clickhouse: ClickHouse;
  db: Db;
  /** HMAC key of the exception list's cursors. */
  cursorSecret: string;
}

export interface ReconciliationRow {
  movementId: string;
  signature: string;
  day: string;
  status: ReconciliationStatus;
  ledgerAmountMicro: bigint;
  chainAmountMicro: bigint;
  commitment: string;
  detail: string;
  checkedAt: string;
}

export interface ChainTransactionView {
  signature: string;
  slot: number;
  blockTime: string;
  fee: number;
  status: string;
  error: string;
  movements: Array<{ owner: string; tokenAccount: string; mint: string; amountMicro: bigint }>;
  reconciliation: ReconciliationRow | null;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

export function parseDay(value: string, field: string): string {
  if (!DAY.test(value) || Number.isNaN(Date.parse(`${value}T00:00:00Z`))) {
    throw new AppError('invalid_request', `${field} must be a date YYYY-MM-DD`, { field });
  }
  return value;
}

/**
 * Per day from..to: the reconciler's totals and verdict counts (ClickHouse) beside the outbox's
 * payments by state and its `not_finalized` count (Postgres). A day appears when either has rows.
 */
export async function reconciliationSummary(
  deps: FinanceReadDeps,
  from: string,
  to: string,
): Promise<DaySummary[]> {
  const [verdicts, payments] = await Promise.all([
    verdictSummary(deps.clickhouse, from, to),
    paymentStateCountsByDay(deps.db, { from, to, notFinalizedAfterMs: NOT_FINALIZED_AFTER_MS }),
  ]);
  const days = new Map(verdicts.map((summary) => [summary.day, summary]));
  for (const row of payments) {
    let summary = days.get(row.day);
    if (!summary) days.set(row.day, (summary = emptySummary(row.day)));
    summary.payments = {
      pending: row.pending,
      confirmed: row.confirmed,
      finalized: row.finalized,
      failed: row.failed,
    };
    summary.exceptions.not_finalized = row.not_finalized;
  }
  return [...days.values()].sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0));
}

function emptySummary(day: string): DaySummary {
  return {
    day,
    ledgerTotalMicro: 0n,
    chainTotalMicro: 0n,
    matched: 0,
    exceptions: Object.fromEntries(
      RECONCILIATION_STATUSES.filter((s) => s !== 'matched').map((s) => [s, 0]),
    ) as DaySummary['exceptions'],
    payments: { pending: 0, confirmed: 0, finalized: 0, failed: 0 },
  };
}

async function verdictSummary(ch: ClickHouse, from: string, to: string): Promise<DaySummary[]> {
  const result = await ch.client.query({
    query: `SELECT toString(ledger_day) AS day, status, count() AS n,
                   toString(sum(ledger_amount)) AS ledger_total, toString(sum(chain_amount)) AS chain_total
              FROM ${ch.table('reconciliation')} FINAL
             WHERE ledger_day BETWEEN {from:Date} AND {to:Date}
             GROUP BY ledger_day, status ORDER BY ledger_day`,
    query_params: { from, to },
    format: 'JSONEachRow',
  });
  const rows = await result.json<{
    day: string;
    status: ReconciliationStatus;
    n: string;
    ledger_total: string;
    chain_total: string;
  }>();
  const days = new Map<string, DaySummary>();
  for (const row of rows) {
    let summary = days.get(row.day);
    if (!summary) days.set(row.day, (summary = emptySummary(row.day)));
    // A balance_mismatch row holds two balances (native ones in base units), not money moved.
    if (row.status !== 'balance_mismatch') {
      summary.ledgerTotalMicro += BigInt(row.ledger_total);
      summary.chainTotalMicro += BigInt(row.chain_total);
    }
    if (row.status === 'matched') summary.matched += Number(row.n);
    else summary.exceptions[row.status] += Number(row.n);
  }
  return [...days.values()];
}

/**
 * Exceptions (every status but matched, or one status), newest ledger day first, keyset-paged.
 * Within a day the outbox's `not_finalized` payments come first, then the reconciler's verdicts,
 * each in its own store's order (movement id, signature, descending): the two are merged by day
 * only, so no order has to agree across Postgres and ClickHouse (which order UUIDs differently).
 * `includeMatched` (a day's full report, the CSV) lists the reconciler's verdicts only.
 */
export async function reconciliationExceptions(
  deps: FinanceReadDeps,
  options: {
    status?: ReconciliationStatus | undefined;
    /** Every recorded verdict, matched ones too, and no `not_finalized` (a day's full report). */
    includeMatched?: boolean;
    day?: string | undefined;
    first: number;
    after?: string | undefined;
  },
): Promise<{ rows: ReconciliationRow[]; hasMore: boolean }> {
  const after = options.after ? decodeCursor(deps.cursorSecret, options.after) : undefined;
  const wantsRecorded = options.status !== 'not_finalized';
  const wantsOutbox =
    !options.includeMatched && (options.status === undefined || options.status === 'not_finalized');
  const [recorded, open] = await Promise.all([
    wantsRecorded ? recordedVerdicts(deps.clickhouse, { ...options, after }) : [],
    wantsOutbox
      ? unfinalizedPayments(deps.db, {
          notFinalizedAfterMs: NOT_FINALIZED_AFTER_MS,
          day: options.day,
          // After a verdict, the outbox rows of its day came before it: the next are a day older.
          below: after && (after.notFinalized ? after : { day: after.day }),
          limit: options.first + 1,
        })
      : [],
  ]);
  // Stable: each source keeps its own order within a day.
  const rows = [...open.map(notFinalizedRow), ...recorded].sort(
    (a, b) =>
      (a.day < b.day ? 1 : a.day > b.day ? -1 : 0) ||
      Number(b.status === 'not_finalized') - Number(a.status === 'not_finalized'),
  );
  return { rows: rows.slice(0, options.first), hasMore: rows.length > options.first };
}

/**
 * Every verdict the reconciler recorded for `day` (matched ones too; no `not_finalized`, which is
 * the outbox's), however many, streamed from ClickHouse as the consumer reads: the day's full
 * report (the CSV). In the table's order (movement id, signature, ascending), which ClickHouse
 * reads in order without sorting; one thread and small blocks keep the engine's working set small
 * (on chdb it is this process's memory: see the adapter's notes on streaming).
 */
export function reconciliationVerdicts(
  deps: { clickhouse: ClickHouse },
  day: string,
  options: { signal?: AbortSignal } = {},
): AsyncIterable<ReconciliationRow> {
  const ch = deps.clickhouse;
  const rows = ch.streamRows<Record<string, string>>({
    query: `SELECT movement_id, signature, toString(ledger_day) AS day, status,
                   toString(ledger_amount) AS ledger_amount, toString(chain_amount) AS chain_amount,
                   commitment, detail, toString(checked_at) AS checked_at
              FROM ${ch.table('reconciliation')} FINAL
             WHERE ledger_day = {day:Date}
             ORDER BY ledger_day, movement_id, signature
             ${STREAM_SETTINGS}`,
    query_params: { day },
    ...(options.signal ? { abort_signal: options.signal } : {}),
  });
  return {
    async *[Symbol.asyncIterator]() {
      for await (const row of rows) yield toRow(row);
    },
  };
}

async function recordedVerdicts(
  ch: ClickHouse,
  options: {
    status?: ReconciliationStatus | undefined;
    includeMatched?: boolean;
    day?: string | undefined;
    first: number;
    after: Cursor | undefined;
  },
): Promise<ReconciliationRow[]> {
  const after = options.after;
  // After an outbox row, every verdict of its day is still to come (they follow the outbox rows).
  const afterCondition = !after
    ? ''
    : after.notFinalized
      ? 'AND ledger_day <= {aDay:Date}'
      : 'AND (ledger_day, movement_id, signature) < ({aDay:Date}, {aId:UUID}, {aSig:String})';
  const result = await ch.client.query({
    query: `SELECT movement_id, signature, toString(ledger_day) AS day, status,
                   toString(ledger_amount) AS ledger_amount, toString(chain_amount) AS chain_amount,
                   commitment, detail, toString(checked_at) AS checked_at
              FROM ${ch.table('reconciliation')} FINAL
             WHERE ${options.status ? 'status = {status:String}' : options.includeMatched ? '1' : "status != 'matched'"}
               ${options.day ? 'AND ledger_day = {day:Date}' : ''}
               ${afterCondition}
             ORDER BY ledger_day DESC, movement_id DESC, signature DESC
             LIMIT {limit:UInt32}`,
    query_params: {
      status: options.status ?? '',
      day: options.day ?? '1970-01-01',
      aDay: after?.day ?? '1970-01-01',
      aId: after?.movementId ?? '00000000-0000-0000-0000-000000000000',
      aSig: after?.signature ?? '',
      limit: options.first + 1,
    },
    format: 'JSONEachRow',
  });
  return (await result.json<Record<string, string>>()).map(toRow);
}

/** An outbox payment not finalized NOT_FINALIZED_AFTER_MS after signing, as an exception. */
function notFinalizedRow(row: UnfinalizedPaymentRow): ReconciliationRow {
  return {
    movementId: row.movement_id,
    signature: row.signature,
    day: row.day,
    status: 'not_finalized',
    ledgerAmountMicro: row.ledger_amount,
    // Nothing final on chain yet; the reconciler's verdict of the payment, if any, is its own row.
    chainAmountMicro: 0n,
    commitment: row.status === 'confirmed' ? 'confirmed' : '',
    detail: `not finalized ${Math.round(row.age_seconds)} s after signing (outbox: ${row.status})`,
    checkedAt: row.checked_at,
  };
}

/** Signed into every exception cursor, so no other list's cursor pages this one. */
export const EXCEPTION_CURSOR_SCOPE = 'finance:reconciliation-exceptions';

/**
 * A row's position, signed (src/domain/pagination/signed-cursor.ts) like every other cursor:
 * [day, movement id, signature], and a fourth element `not_finalized` for an outbox row. Before,
 * the position was plain base64url JSON that anyone could write; such cursors are refused now.
 */
export function cursorOf(deps: { cursorSecret: string }, row: ReconciliationRow): string {
  const position = [row.day, row.movementId, row.signature];
  if (row.status === 'not_finalized') position.push('not_finalized');
  return encodeSignedCursor(deps.cursorSecret, EXCEPTION_CURSOR_SCOPE, position);
}

interface Cursor {
  day: string;
  movementId: string;
  signature: string;
  /** The position is an outbox row's (listed before the day's recorded verdicts). */
  notFinalized: boolean;
}

// Checked in full, not by shape: ClickHouse refused `----…` as a UUID with an error (answered
// INTERNAL_SERVER_ERROR) and read 36 hex digits or a 13th month as something else.
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A YYYY-MM-DD that names a real day (no 2026-02-30: Date would roll it into March). */
function isCalendarDay(day: string): boolean {
  if (!DAY.test(day)) return false;
  const date = new Date(`${day}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === day;
}

/** The position `cursor` holds: its MAC first, then every value (the secret may be a public default). */
function decodeCursor(secret: string, cursor: string): Cursor {
  const notOurs = () =>
    new AppError('invalid_request', 'after is not a cursor this API gave out', { field: 'after' });
  let values: unknown[];
  try {
    values = decodeSignedCursor(secret, EXCEPTION_CURSOR_SCOPE, cursor, 'after');
  } catch {
    throw notOurs();
  }
  const [day, movementId, signature, source, ...rest] = values;
  if (
    typeof day === 'string' &&
    isCalendarDay(day) &&
    typeof movementId === 'string' &&
    UUID.test(movementId) &&
    typeof signature === 'string' &&
    (source === undefined || source === 'not_finalized') &&
    rest.length === 0
  ) {
    return { day, movementId, signature, notFinalized: source === 'not_finalized' };
  }
  throw notOurs();
}

export async function chainTransaction(
  ch: ClickHouse,
  signature: string,
): Promise<ChainTransactionView | null> {
  const [txResult, movementsResult, verdictResult] = await Promise.all([
    ch.client.query({
      query: `SELECT signature, slot, toString(block_time) AS block_time, fee, status, error
                FROM ${ch.table('chain_transactions')} FINAL WHERE signature = {sig:String}`,
      query_params: { sig: signature },
      format: 'JSONEachRow',
    }),
    ch.client.query({
      query: `SELECT owner, token_account, mint, toString(amount) AS amount
                FROM ${ch.table('token_movements')} FINAL WHERE signature = {sig:String} ORDER BY amount`,
      query_params: { sig: signature },
      format: 'JSONEachRow',
    }),
    ch.client.query({
      query: `SELECT movement_id, signature, toString(ledger_day) AS day, status,
                     toString(ledger_amount) AS ledger_amount, toString(chain_amount) AS chain_amount,
                     commitment, detail, toString(checked_at) AS checked_at
                FROM ${ch.table('reconciliation')} FINAL WHERE signature = {sig:String}
               ORDER BY checked_at DESC LIMIT 1`,
      query_params: { sig: signature },
      format: 'JSONEachRow',
    }),
  ]);
  const [tx] = await txResult.json<Record<string, string>>();
  const [verdict] = await verdictResult.json<Record<string, string>>();
  if (!tx && !verdict) return null;
  const movements = await movementsResult.json<Record<string, string>>();
  return {
    signature,
    slot: Number(tx?.slot ?? 0),
    blockTime: tx?.block_time ?? '',
    fee: Number(tx?.fee ?? 0),
    status: tx?.status ?? 'not_found',
    error: tx?.error ?? '',
    movements: movements.map((m) => ({
      owner: m.owner!,
      tokenAccount: m.token_account!,
      mint: m.mint!,
      amountMicro: BigInt(m.amount!),
    })),
    reconciliation: verdict ? toRow(verdict) : null,
  };
}

function toRow(row: Record<string, string>): ReconciliationRow {
  return {
    movementId: row.movement_id!,
    signature: row.signature!,
    day: row.day!,
    status: row.status as ReconciliationStatus,
    ledgerAmountMicro: BigInt(row.ledger_amount!),
    chainAmountMicro: BigInt(row.chain_amount!),
    commitment: row.commitment!,
    detail: row.detail!,
    checkedAt: row.checked_at!,
  };
}
