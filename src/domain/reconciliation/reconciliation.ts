/**
 * Reconciliation: does what the chain moved equal what the ledger says moved? Pure rules; the
 * indexer (src/app/indexer) fetches both sides and records the verdict.
 */

/**
 * What finance sees per ledger movement. Every status but `not_finalized` is a verdict the
 * reconciler records in ClickHouse (ledger legs against the chain's token balances);
 * `not_finalized` is the outbox's own state, read from Postgres when finance asks (see
 * NOT_FINALIZED_AFTER_MS): a payment may be listed under a recorded verdict and under
 * `not_finalized` at once, since they answer different questions.
 */
export type ReconciliationStatus =
  | 'matched'
  | 'amount_mismatch'
  | 'wrong_party'
  | 'failed_on_chain'
  | 'missing'
  | 'pending'
  | 'unexplained'
  | 'not_finalized'
  /**
   * A verdict of a movement in a closed finance period that differs from the one the period froze:
   * recorded again on the day it was found (the open period), the closed period's files unchanged.
   */
  | 'post_close_difference'
  /**
   * The daily balance check (src/app/indexer/balance-check.ts): a user's token account holds other
   * than its ledger account's balance + pending, twice in a row with the same values. Not a movement:
   * the row's amounts are the two balances (USDC micro-USD, or native base units), its "signature"
   * `balance-check:<day>:<token account>`, its movement id the nil UUID.
   */
  | 'balance_mismatch';

export const RECONCILIATION_STATUSES: readonly ReconciliationStatus[] = [
  'matched',
  'amount_mismatch',
  'wrong_party',
  'failed_on_chain',
  'missing',
  'pending',
  'unexplained',
  'not_finalized',
  'post_close_difference',
  'balance_mismatch',
];

/**
 * A payment whose outbox row is still `signed`, `sent` or `confirmed` this long after it was
 * signed (the row's `created_at`) is the exception `not_finalized`. A cluster finalizes a landed
 * transaction ~32 slots (~13 s) after it lands, and the outbox follows it there within seconds
 * more; 5 minutes leaves room for re-sends and a slow RPC node, so what is still open by then is
 * stuck (a finality follower down, a payment the chain keeps dropping). A `failed` payment is not
 * one: it was reversed, and the reconciler lists it as `failed_on_chain`.
 */
export const NOT_FINALIZED_AFTER_MS = 5 * 60_000;

/** Every status but `matched` is an exception finance looks at. */
export const isException = (status: ReconciliationStatus): boolean => status !== 'matched';

/** Net change per wallet owner (base58 address), in the mint's base units; zero entries left out. */
export type Deltas = ReadonlyMap<string, bigint>;

export interface Verdict {
  status: 'matched' | 'amount_mismatch' | 'wrong_party';
  /** Sum of the positive deltas on each side: the money that moved. */
  ledgerAmount: bigint;
  chainAmount: bigint;
  /** Human-readable difference, '' when matched. */
  detail: string;
}

/**
 * Compares the ledger's expected net change per owner with the chain's. Another set of owners is
 * `wrong_party` (money went to, or came from, someone the ledger does not name); the same owners
 * with another amount is `amount_mismatch`.
 */
export function compareDeltas(ledger: Deltas, chain: Deltas): Verdict {
  const ledgerAmount = positiveSum(ledger);
  const chainAmount = positiveSum(chain);
  const owners = new Set([...nonZero(ledger).keys(), ...nonZero(chain).keys()]);
  const onlyLedger = [...owners].filter((o) => !nonZero(chain).has(o));
  const onlyChain = [...owners].filter((o) => !nonZero(ledger).has(o));
  if (onlyLedger.length > 0 || onlyChain.length > 0) {
    return {
      status: 'wrong_party',
      ledgerAmount,
      chainAmount,
      detail: [
        onlyLedger.length
          ? `ledger names ${onlyLedger.join(', ')} but the chain did not move their money`
          : '',
        onlyChain.length ? `the chain moved money of ${onlyChain.join(', ')} the ledger does not name` : '',
      ]
        .filter(Boolean)
        .join('; '),
    };
  }
  const differing = [...owners].filter((o) => (ledger.get(o) ?? 0n) !== (chain.get(o) ?? 0n));
  if (differing.length > 0) {
    return {
      status: 'amount_mismatch',
      ledgerAmount,
      chainAmount,
      detail: differing
        .map((o) => `${o}: ledger ${ledger.get(o) ?? 0n}, chain ${chain.get(o) ?? 0n}`)
        .join('; '),
    };
  }
  return { status: 'matched', ledgerAmount, chainAmount, detail: '' };
}

/** Adds `amount` to `owner`'s entry. */
export function addDelta(deltas: Map<string, bigint>, owner: string, amount: bigint): void {
  deltas.set(owner, (deltas.get(owner) ?? 0n) + amount);
}

function nonZero(deltas: Deltas): Map<string, bigint> {
  return new Map([...deltas].filter(([, amount]) => amount !== 0n));
}

function positiveSum(deltas: Deltas): bigint {
  return [...deltas.values()].reduce((sum, amount) => (amount > 0n ? sum + amount : sum), 0n);
}
