export type AccountRole = 'user' | 'finance' | 'admin';
export const ACCOUNT_ROLES: readonly AccountRole[] = ['user', 'finance', 'admin'];

export interface Account {
  id: string;
  handle: string;
  displayName: string;
  bio: string;
  /** Null until the user sets one; profiles then show the default avatar we serve. */
  avatarUrl: string | null;
  socialUsername: string | null;
  role: AccountRole;
  walletAddress: string;
  handleChangedAt: Date | null;
  createdAt: Date;
}

/**
 * A handle its owner gave up, kept for that account alone until `reservedUntil` (the handle-change
 * cooldown): nobody else may take it meanwhile, so sends and mentions meant for the owner cannot
 * reach a newcomer, and the owner may take it back.
 */
export interface HandleReservation {
  handle: string;
  accountId: string;
  reservedUntil: Date;
}

/** Counts shown on a public profile. */
export interface AccountStats {
  followerCount: number;
  followingCount: number;
  postCount: number;
}

/** Balances in micro-USD (bigint); zero until the ledger moves money. */
export interface AccountMoney {
  availableMicro: bigint;
  /** Credits whose chain transaction has not confirmed yet: not spendable until it does. */
  pendingMicro: bigint;
  totalEarnedMicro: bigint;
  totalSpentMicro: bigint;
}
