import type { AccountMoney } from '../accounts/account.js';
import type { Currency, Leg, MovementKind } from './ledger.js';

export interface MovementInput {
  kind: MovementKind;
  legs: Leg[];
  /**
   * Natural key of the movement (an idempotency key, an on-chain signature for a deposit): a
   * second record with the same key returns the first movement instead of moving money twice.
   */
  idempotencyKey?: string;
  /** The movement this one undoes (an on-chain failure); at most one reversal per movement. */
  reverses?: string;
  /**
   * How the legs touch `pending` (money waiting for its chain transaction to confirm):
   * - `hold`: the credits go to `pending`, not to the spendable balance (a payment just signed);
   * - `unhold`: the debits come out of `pending` (the reversal of a held payment that failed).
   * Unset: every leg moves the spendable balance (a deposit already on chain).
   */
  pending?: 'hold' | 'unhold';
}

export interface LedgerStore {
  /**
   * Records a balanced movement atomically. A user leg that would take a balance below zero fails
   * the whole movement with AppError('insufficient_balance'); nothing is written.
   */
  record(movement: MovementInput): Promise<{ movementId: string; replayed: boolean }>;
  /** An account's money in one currency (USDC when unset); all zero before its first movement. */
  money(accountId: string, currency?: Currency): Promise<AccountMoney>;
}
