import type { ColumnType, Generated } from 'kysely';

/** Kysely's view of the Postgres schema; kept in step with schema/postgres by hand. */
export interface Database {
  accounts: AccountsTable;
  released_handles: ReleasedHandlesTable;
  platform_wallets: PlatformWalletsTable;
  idempotency_keys: IdempotencyKeysTable;
  api_keys: ApiKeysTable;
  follows: FollowsTable;
  ledger_accounts: LedgerAccountsTable;
  ledger_movements: LedgerMovementsTable;
  ledger_legs: LedgerLegsTable;
  chain_transactions: ChainTransactionsTable;
  deposit_transactions: DepositTransactionsTable;
  posts: PostsTable;
  domain_events: DomainEventsTable;
  reposts: RepostsTable;
  likes: LikesTable;
  sends: SendsTable;
  swaps: SwapsTable;
  wallet_cursors: WalletCursorsTable;
  shipper_cursors: ShipperCursorsTable;
  creator_fund_epochs: CreatorFundEpochsTable;
  creator_fund_batches: CreatorFundBatchesTable;
  creator_fund_payouts: CreatorFundPayoutsTable;
  event_staging: EventStagingTable;
  account_events: AccountEventsTable;
  account_event_heads: AccountEventHeadsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  report_runs: ReportRunsTable;
  finance_periods: FinancePeriodsTable;
  finance_period_verdicts: FinancePeriodVerdictsTable;
}

/** signed -> sent (processed) -> confirmed -> finalized, or failed (landed with an error; legs reversed). */
export type ChainTransactionStatus = 'signed' | 'sent' | 'confirmed' | 'finalized' | 'failed';

export interface ChainTransactionsTable {
  id: Generated<string>;
  movement_id: string;
  signature: string;
  wire: Buffer;
  blockhash: string;
  last_valid_block_height: bigint;
  status: Generated<ChainTransactionStatus>;
  replaced_signatures: Generated<string[]>;
  reconciled_commitment: 'confirmed' | 'finalized' | null;
  reconciled_status: string | null;
  reconciled_at: Date | null;
  attempts: Generated<number>;
  error: unknown;
  slot: bigint | null;
  created_at: ColumnType<Date, Date | undefined, never>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
  /** When the outbox last saw it confirmed; null while it is not (again). */
  confirmed_at: Date | null;
  finalized_at: Date | null;
  /** Its credits to users wait in `pending` (released once per confirmation; held again if it vanished). */
  credits_held: Generated<boolean>;
}

/**
 * A deposit's chain transaction (one per `deposit` movement keyed `deposit:<signature>`, written by
 * a trigger as the deposit is credited): followed from confirmed to finalized like the outbox's.
 */
export interface DepositTransactionsTable {
  movement_id: string;
  signature: string;
  /** `reversed`: a fork dropped the block it was credited from (the block follower reversed it). */
  status: Generated<'confirmed' | 'finalized' | 'reversed'>;
  /** The slot the chain reported it in when it was finalized; null before. */
  slot: bigint | null;
  confirmed_at: Date;
  finalized_at: Date | null;
  /** Since when the chain has not known it (two looks in a row); null while it does. */
  missing_since: Date | null;
}

export interface PostsTable {
  id: Generated<string>;
  author_id: string;
  type: 'post' | 'reply' | 'quote';
  content: string;
  parent_id: string | null;
  quoted_post_id: string | null;
  movement_id: string;
  created_at: ColumnType<Date, Date | undefined, never>;
  /** Its payment failed on chain (refunded): shown nowhere, counted nowhere. Kept by a trigger. */
  failed: StoredByTrigger<boolean>;
  /** Every like row of the post (kept by triggers, like every counter below). */
  like_count: StoredByTrigger<number>;
  /** Replies whose payment did not fail. */
  reply_count: StoredByTrigger<number>;
  /** Quotes whose payment did not fail. */
  quote_count: StoredByTrigger<number>;
  /** Reposts whose payment did not fail. */
  repost_count: StoredByTrigger<number>;
}

/**
 * A column the database keeps itself (schema/postgres/2026_11_24_f_stored_counters.ts): read it,
 * never write it, so no code path can move a counter apart from the rows it counts.
 */
type StoredByTrigger<T> = ColumnType<T, never, never>;

export interface RepostsTable {
  id: Generated<string>;
  reposter_id: string;
  /** The original post. */
  post_id: string;
  movement_id: string;
  created_at: ColumnType<Date, Date | undefined, never>;
  /** Its payment failed on chain (refunded): not shown, not counted; a new attempt may replace it. */
  failed: StoredByTrigger<boolean>;
}

export interface SendsTable {
  id: Generated<string>;
  sender_id: string;
  recipient_id: string;
  amount_micro: bigint;
  memo: string | null;
  movement_id: string;
  created_at: ColumnType<Date, Date | undefined, never>;
}

/** A sale of native tokens to the swap pool, with the reserves it was priced against. */
export interface SwapsTable {
  id: Generated<string>;
  account_id: string;
  /** Native base units sold (fee included). */
  amount_tokens: bigint;
  fee_tokens: bigint;
  /** micro-USD received. */
  amount_usdc: bigint;
  reserve_native_before: bigint;
  reserve_usdc_before: bigint;
  movement_id: string;
  created_at: ColumnType<Date, Date | undefined, never>;
}

export interface LikesTable {
  account_id: string;
  post_id: string;
  created_at: ColumnType<Date, Date | undefined, never>;
}

export interface DomainEventsTable {
  id: Generated<string>;
  type: string;
  actor_id: string | null;
  post_id: string | null;
  amount_micro: Generated<bigint>;
  payload: Generated<unknown>;
  occurred_at: ColumnType<Date, Date | undefined, never>;
  /** Insertion order within a transaction (the shipper's tie-break). */
  seq: Generated<string>;
  /** The writing transaction's id (xid8, as text): the shipper's commit-order cursor. */
  txid: Generated<string>;
}

export interface LedgerAccountsTable {
  id: Generated<string>;
  kind: 'user' | 'treasury' | 'creator_fund' | 'fee_pool' | 'swap_pool' | 'external';
  account_id: string | null;
  /** USDC (micro-USD) or native-token base units: every amount on the row and its legs. */
  currency: Generated<'usdc' | 'native'>;
  balance: Generated<bigint>;
  /** Credits waiting for their transaction to confirm: not spendable yet. */
  pending: Generated<bigint>;
  total_earned: Generated<bigint>;
  total_spent: Generated<bigint>;
}

export interface LedgerMovementsTable {
  id: Generated<string>;
  kind: 'post' | 'repost' | 'send' | 'deposit' | 'earn' | 'reversal' | 'swap' | 'fund_payout';
  idempotency_key: string | null;
  reverses_id: string | null;
  created_at: ColumnType<Date, Date | undefined, never>;
}

export interface LedgerLegsTable {
  id: Generated<string>;
  movement_id: string;
  ledger_account_id: string;
  amount: bigint;
  counts: Generated<'spent' | 'earned' | 'none'>;
  /** The writing transaction's id (xid8, as text): the shipper's commit-order cursor. */
  txid: Generated<string>;
}

/** Where the event shipper stands in each stream ('events', 'legs'): the last row shipped. */
export interface ShipperCursorsTable {
  stream: string;
  last_txid: string;
  last_seq: string;
  updated_at: Generated<Date>;
}

/** The wallet follower's place in one address's history (newest signature seen). */
export interface WalletCursorsTable {
  address: string;
  last_signature: string | null;
  last_slot: bigint | null;
  updated_at: Generated<Date>;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  key_hash: Buffer;
  scopes: string[];
  created_at: ColumnType<Date, Date | undefined, never>;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

export interface FollowsTable {
  follower_id: string;
  followee_id: string;
  created_at: ColumnType<Date, Date | undefined, never>;
}

export interface IdempotencyKeysTable {
  account_id: string;
  key: string;
  request_hash: string;
  response_status: number | null;
  response_body: string | null;
  created_at: ColumnType<Date, Date | undefined, never>;
  /** The request working on the key (a random token per request); a repeat may take it over. */
  owner: ColumnType<string, string | undefined, string>;
  /** Until when the owner is presumed alive: it renews this while it works. */
  lease_until: ColumnType<Date, Date | undefined, Date>;
  /** What the owner's paid write created, recorded in the statement that moved the money. */
  resource_kind: 'post' | 'repost' | 'send' | 'swap' | null;
  resource_id: string | null;
}

export interface PlatformWalletsTable {
  role: string;
  address: string;
  sealed_secret: string | null;
  created_at: ColumnType<Date, Date | undefined, never>;
}

export interface AccountsTable {
  id: Generated<string>;
  handle: string;
  display_name: string;
  bio: Generated<string>;
  avatar_url: string | null;
  social_username: string | null;
  role: Generated<'user' | 'finance' | 'admin'>;
  wallet_address: string | null;
  wallet_secret: string | null;
  handle_changed_at: Date | null;
  created_at: ColumnType<Date, Date | undefined, never>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
  /** Shown posts, replies and quotes (payment not failed). */
  post_count: StoredByTrigger<number>;
  follower_count: StoredByTrigger<number>;
  following_count: StoredByTrigger<number>;
}

/** A handle given up by a rename, reserved for its previous owner until `reserved_until`. */
export interface ReleasedHandlesTable {
  handle: string;
  account_id: string;
  released_at: ColumnType<Date, Date | undefined, Date>;
  reserved_until: Date;
}

/** One creator-fund epoch (native base units): its plan, or why nothing was planned. */
export interface CreatorFundEpochsTable {
  epoch_start: Date;
  epoch_end: Date;
  budget: bigint;
  fund_available: bigint;
  paid_total: Generated<bigint>;
  author_count: Generated<number>;
  outcome: 'planned' | 'no_engagement' | 'unfunded';
  note: Generated<string>;
  planned_at: ColumnType<Date, Date | undefined, never>;
}

/** One payout transaction of an epoch: its ledger movement and outbox row. */
export interface CreatorFundBatchesTable {
  epoch_start: Date;
  batch_index: number;
  movement_id: string;
  chain_transaction_id: string;
  total: bigint;
  transfers: number;
}

/** One author's payout in one epoch (native base units) and the batch that pays it. */
export interface CreatorFundPayoutsTable {
  epoch_start: Date;
  account_id: string;
  score: bigint;
  amount: bigint;
  batch_index: number;
}

/** What a change has to tell one account, written in the change's transaction (migration 2026_11_27_b). */
export interface EventStagingTable {
  id: Generated<bigint>;
  account_id: string;
  type: string;
  data: unknown;
  /** Set for what must be told once (engagement, a send received): `<type>:<movement id>`. */
  dedupe_key: string | null;
  created_at: Generated<Date>;
}

/** The account event log: numbered per account by the one sequencer. */
export interface AccountEventsTable {
  account_id: string;
  sequence: bigint;
  id: Generated<string>;
  type: string;
  data: unknown;
  dedupe_key: string | null;
  created_at: Date;
}

export interface AccountEventHeadsTable {
  account_id: string;
  last_sequence: bigint;
}

export interface WebhookEndpointsTable {
  id: Generated<string>;
  account_id: string;
  url: string;
  event_types: string[];
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  status: Generated<'enabled' | 'disabled'>;
  disabled_reason: string | null;
  /** The sequence of the last event of the account's log delivered (or not subscribed to). */
  delivered_through: Generated<bigint>;
  /** Attempts made so far at the event after `delivered_through`. */
  attempt: Generated<number>;
  /** When the event after `delivered_through` first failed: the 3-day window counts from here. */
  failing_since: Date | null;
  next_attempt_at: Date | null;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  /** The account's last sequence when a replay with events to send was asked; in flight while above delivered_through. */
  replay_through: bigint | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface WebhookDeliveriesTable {
  id: Generated<bigint>;
  endpoint_id: string;
  event_id: string;
  sequence: bigint;
  attempt: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  delivered: boolean;
  next_attempt_at: Date | null;
  created_at: Generated<Date>;
}

/** A report run (schema/postgres/2026_11_29_d_report_runs.ts). */
export interface ReportRunsTable {
  id: Generated<string>;
  /** Who asked. */
  account_id: string;
  type: string;
  interval_start: Date;
  interval_end: Date;
  timezone: string;
  columns: string[];
  format: string;
  /** The account an account.statement is about; null for the whole ledger. */
  subject_account_id: string | null;
  params_hash: string;
  status: Generated<'pending' | 'running' | 'succeeded' | 'failed'>;
  row_count: bigint | null;
  bytes: bigint | null;
  sha256: string | null;
  file_key: string | null;
  summary: unknown;
  error: string | null;
  attempts: Generated<number>;
  lease_until: Date | null;
  created_at: Generated<Date>;
  started_at: Date | null;
  finished_at: Date | null;
}

/** A finance period (schema/postgres/2026_11_29_e_finance_periods.ts). */
export interface FinancePeriodsTable {
  id: Generated<string>;
  period: string;
  timezone: string;
  period_start: Date;
  period_end: Date;
  status: 'open' | 'closing' | 'closed';
  closed_by: string | null;
  closing_at: Date | null;
  closed_at: Date | null;
  balance_run_id: string | null;
  ledger_run_id: string | null;
  reconciliation_run_id: string | null;
  reopened_at: Date | null;
  reopened_by: string | null;
}

/** A closed period's verdicts that were not `matched` when it closed. */
export interface FinancePeriodVerdictsTable {
  period_id: string;
  movement_id: string;
  signature: string;
  status: string;
}
