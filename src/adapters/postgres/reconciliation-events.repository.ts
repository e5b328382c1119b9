import { sql } from 'kysely';
import type { ReconciliationStatus } from '../../domain/reconciliation/reconciliation.js';
import type { Db } from './db.js';

/** A verdict finance must be told of, with the amounts the reconciler recorded (micro-USD). */
export interface ReconciliationException {
  signature: string;
  verdict: ReconciliationStatus;
  ledgerAmountMicro: bigint;
  chainAmountMicro: bigint;
  detail: string;
}

/**
 * Stages `reconciliation.exception` for every account with the finance role, one per exception,
 * in the caller's transaction (the reconciler's, so the event commits with the verdict's mark on
 * the outbox row). `data` is the exception as finance's list shows it: `swap_tx`, `verdict`, the
 * amounts in USD (numbers, as finance's JSON prints them) and `detail`. The dedupe key names the
 * signature and the verdict, so a re-check reaching the same verdict (the finalized look, a
 * `reconcile --since`, a round repeated after a crash) is told once; a new verdict of the same
 * signature is told too. Answers how many rows it staged.
 */
export async function stageReconciliationExceptions(
  db: Db,
  exceptions: readonly ReconciliationException[],
): Promise<number> {
  if (exceptions.length === 0) return 0;
  // trim_scale: 1000000 / 1e6 is `1`, not `1.000000...`, in the JSON.
  const { numAffectedRows } = await sql`
    INSERT INTO event_staging (account_id, type, data, dedupe_key)
    SELECT a.id, 'reconciliation.exception',
           jsonb_build_object(
             'swap_tx', e.signature,
             'verdict', e.verdict,
             'ledger_amount_usd', trim_scale(e.ledger_micro / 1000000),
             'chain_amount_usd', trim_scale(e.chain_micro / 1000000),
             'detail', e.detail),
           'reconciliation.exception:' || e.signature || ':' || e.verdict
      FROM unnest(${exceptions.map((e) => e.signature)}::text[],
                  ${exceptions.map((e) => e.verdict)}::text[],
                  ${exceptions.map((e) => e.ledgerAmountMicro.toString())}::numeric[],
                  ${exceptions.map((e) => e.chainAmountMicro.toString())}::numeric[],
                  ${exceptions.map((e) => e.detail)}::text[])
             AS e (signature, verdict, ledger_micro, chain_micro, detail)
     CROSS JOIN accounts a
     WHERE a.role = 'finance'
     ORDER BY e.signature, e.verdict, a.id`.execute(db);
  return Number(numAffectedRows ?? 0n);
}
