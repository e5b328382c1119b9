import { AppError } from '../errors.js';
import { parsePageLimit } from '../pagination/page-limit.js';
import type { PostType } from '../posts/post-rules.js';
import { decodeHistoryCursor, encodeHistoryCursor, type HistoryPosition } from './history-cursor.js';
import { formatNative } from '../payouts/creator-fund-rules.js';
import type { MovementKind } from './ledger.js';
import { isSignatureText, paymentStateOf, type OutboxState, type PaymentState } from './payment-state.js';

/**
 * The spec's types (post, repost, earn, send, receive) plus three of ours: `deposit` (USDC arriving
 * from outside), `refund` (the reversal of a payment that failed on chain) and `swap` (native
 * tokens sold to the swap pool: the entry's amount is the USDC received).
 */
export type TransactionType = 'post' | 'repost' | 'earn' | 'send' | 'receive' | 'deposit' | 'refund' | 'swap';

/**
 * One entry of an account's history: one ledger movement as that account saw it, with the state of
 * its chain transaction (status, slot, confirmedAt, finalizedAt; see paymentStateOf).
 */
export interface Transaction extends PaymentState {
  /** The ledger movement's id. */
  id: string;
  type: TransactionType;
  /** Signed micro-USD: the account's legs in the movement (negative when it spent). */
  amountMicro: bigint;
  description: string;
  /** Solana signature of the movement (a reversal: of the movement it reverses); null if it has none. */
  swapTx: string | null;
  relatedPostId: string | null;
  /** Handle of the other party of a send or receive (and of its refund); null otherwise. */
  counterparty: string | null;
  createdAt: Date;
}

/** What the store knows about one movement touching the account. */
export interface HistoryRow {
  movementId: string;
  kind: MovementKind;
  /** Sum of the account's legs in the movement, signed micro-USD. */
  amountMicro: bigint;
  /**
   * Sum of the account's native legs, signed native base units: a creator-fund payout (or its
   * reversal), the only native movement the history lists. 0 or absent otherwise.
   */
  nativeAmount?: bigint;
  createdAt: Date;
  /** `created_at` to the microsecond (ISO 8601 UTC), for the cursor. */
  createdAtExact: string;
  idempotencyKey: string | null;
  /** For a reversal: what it reverses; null otherwise. */
  reversed: { kind: MovementKind; idempotencyKey: string | null } | null;
  /** Signature of the movement's chain transaction (a reversal: the reversed movement's). */
  chainSignature: string | null;
  /** The post paid by the movement (a reversal: by the reversed movement). */
  post: { id: string; type: PostType } | null;
  /** The send paid by the movement (a reversal: by the reversed movement), seen from the account. */
  send?: { counterparty: string; memo: string | null } | null;
  /** The outbox row of the movement's chain transaction (a reversal: the reversed movement's). */
  outbox: OutboxState | null;
}

export interface TransactionHistoryStore {
  /** Movements touching the account, newest first (`created_at`, then id), strictly after `after`. */
  page(accountId: string, query: { limit: number; after?: HistoryPosition }): Promise<HistoryRow[]>;
  /**
   * The account's movements paid by the chain transaction whose signature is, or was before a
   * re-sign, `signature` (reversals left out), or its deposit of that signature; newest first.
   */
  bySignature(accountId: string, signature: string): Promise<HistoryRow[]>;
}

export interface TransactionHistoryDeps {
  history: TransactionHistoryStore;
  /** HMAC secret of the cursors (see DEFAULT_CURSOR_SECRET). */
  cursorSecret: string;
}

export const HISTORY_DEFAULT_LIMIT = 20;
export const HISTORY_MAX_LIMIT = 50;

export interface TransactionPage {
  items: Array<{ transaction: Transaction; cursor: string }>;
  hasMore: boolean;
  /** Cursor of the last item, present only when hasMore. */
  nextCursor?: string;
}

/** How the transport calls the page size and the cursor, for error messages (GraphQL: first, after). */
export interface HistoryArgNames {
  limit: string;
  cursor: string;
}

/**
 * One page of the account's transaction history, newest first. `limit` may come as a number
 * (GraphQL `first`) or as the query string's text (REST); `cursor` is one this function issued
 * for the same account. REST and GraphQL both call this.
 */
export async function listTransactions(
  deps: TransactionHistoryDeps,
  accountId: string,
  input: { limit?: unknown; cursor?: string | null },
  names: HistoryArgNames = { limit: 'limit', cursor: 'cursor' },
): Promise<TransactionPage> {
  const limit = parseHistoryLimit(input.limit, names.limit);
  const after =
    input.cursor != null
      ? decodeHistoryCursor(deps.cursorSecret, accountId, input.cursor, names.cursor)
      : undefined;
  // One extra row tells whether another page exists without a count.
  const rows = await deps.history.page(accountId, { limit: limit + 1, ...(after ? { after } : {}) });
  const items = rows.slice(0, limit).map((row) => ({
    transaction: toTransaction(row),
    cursor: encodeHistoryCursor(deps.cursorSecret, accountId, {
      createdAt: row.createdAtExact,
      movementId: row.movementId,
    }),
  }));
  const hasMore = rows.length > limit;
  const last = items.at(-1);
  return { items, hasMore, ...(hasMore && last ? { nextCursor: last.cursor } : {}) };
}

/** 1 to 50, default 20 (parsePageLimit). */
export function parseHistoryLimit(raw: unknown, field = 'limit'): number {
  return parsePageLimit(raw, { max: HISTORY_MAX_LIMIT, fallback: HISTORY_DEFAULT_LIMIT, field });
}

const DEPOSIT_KEY_PREFIX = 'deposit:';

/**
 * A deposit is keyed `deposit:<signature>` (the USDC transfer that brought the money in), or
 * `deposit:<signature>:<slot>` when it landed again after a fork dropped its first landing.
 */
function depositSignature(idempotencyKey: string | null): string | null {
  return idempotencyKey?.startsWith(DEPOSIT_KEY_PREFIX)
    ? idempotencyKey.slice(DEPOSIT_KEY_PREFIX.length).split(':')[0] || null
    : null;
}

/** ` (epoch from <start>)` of a payout batch keyed `fund:<epoch start>:<batch>`; '' otherwise. */
function fundEpochOf(idempotencyKey: string | null): string {
  const match = /^fund:(.+):\d+$/.exec(idempotencyKey ?? '');
  return match ? ` (epoch from ${match[1]})` : '';
}

type Engagement = PostType | 'repost';

const SPENT_ON: Record<Engagement, string> = {
  post: 'Post',
  reply: 'Reply to a post',
  quote: 'Quote of a post',
  repost: 'Repost of a post',
};

const EARNED_FROM: Record<Engagement, string> = {
  post: 'Earned from engagement with your post', // a plain post pays nobody: not expected
  reply: 'Earned from a reply to your post',
  quote: 'Earned from a quote of your post',
  repost: 'Earned from a repost of your post',
};

/** `Sent to @bob: lunch`, `Received from @alice`; the memo only when there is one. */
function sendDescription(
  direction: 'Sent to' | 'Received from',
  send: { counterparty: string; memo: string | null } | null,
): string {
  if (!send) return direction === 'Sent to' ? 'Sent USDC' : 'Received USDC';
  return `${direction} @${send.counterparty}${send.memo ? `: ${send.memo}` : ''}`;
}

/**
 * A movement's type as the account sees it: the payer of a post or repost spent it, the author
 * paid from it earned; a send is sent or received; a reversal is a refund (of either side).
 */
export function transactionTypeOf(kind: MovementKind, spent: boolean): TransactionType {
  switch (kind) {
    case 'post':
    case 'repost':
      return spent ? kind : 'earn';
    case 'earn':
    case 'fund_payout':
      return 'earn';
    case 'send':
      return spent ? 'send' : 'receive';
    case 'reversal':
      return 'refund';
    case 'swap':
    case 'deposit':
      return kind;
  }
}

/** How one movement reads from the account's side: its type and a sentence for people. */
export function toTransaction(row: HistoryRow): Transaction {
  const spent = row.amountMicro < 0n;
  const engagement: Engagement = row.kind === 'repost' ? 'repost' : (row.post?.type ?? 'post');
  const type = transactionTypeOf(row.kind, spent);
  let description: string;
  let swapTx = row.chainSignature;
  switch (row.kind) {
    case 'post':
    case 'repost':
      // The payer's leg spends the price; the parent author's leg earns its share.
      description = spent ? SPENT_ON[engagement] : EARNED_FROM[engagement];
      break;
    case 'earn':
      description = 'Creator fund payout';
      break;
    case 'fund_payout':
      // Paid in native tokens: amount_usd is 0 (no dollars moved; a price would be a guess that
      // changes), the tokens are in the description. swap_tx is the batch's signature.
      description = `Creator fund payout: ${formatNative(row.nativeAmount ?? 0n)} native tokens${fundEpochOf(row.idempotencyKey)}`;
      break;
    case 'swap':
      // The history is the USDC account's: the amount is the USDC the swap paid out.
      description = 'Swap of native tokens to USDC';
      break;
    case 'send':
      description = spent
        ? sendDescription('Sent to', row.send ?? null)
        : sendDescription('Received from', row.send ?? null);
      break;
    case 'deposit':
      description = 'Deposit';
      swapTx ??= depositSignature(row.idempotencyKey);
      break;
    case 'reversal':
      // The payer gets the price back; an author who had earned from it gives the share back.
      description =
        row.reversed?.kind === 'swap'
          ? 'Swap reversed: the transaction failed on chain'
          : row.reversed?.kind === 'fund_payout'
            ? `Creator fund payout reversed: the batch failed on chain (${formatNative(row.nativeAmount ?? 0n)} native tokens)`
            : spent
              ? 'Earnings reversed: the payment failed on chain'
              : 'Refund of a failed payment';
      swapTx ??= depositSignature(row.reversed?.idempotencyKey ?? null);
      break;
  }
  return {
    id: row.movementId,
    type,
    amountMicro: row.amountMicro,
    description,
    swapTx,
    relatedPostId: row.post?.id ?? null,
    counterparty: row.send?.counterparty ?? null,
    createdAt: row.createdAt,
    ...paymentStateOf({
      outbox: row.outbox,
      swapTx,
      isDeposit: row.kind === 'deposit',
      createdAt: row.createdAt,
    }),
  };
}

/**
 * One payment of the account by its `swap_tx`, as its history shows it (the same entry, so an
 * author's earning from a reply is the reply's payment as the author saw it). A signature the
 * payment had before a re-sign finds it too; the answer carries the current one. A payment that
 * failed answers with status `failed` (its refund is a separate history entry). Anything else (a
 * signature of another account's payment, an unknown or malformed one) is not_found: whose
 * payments exist is nobody else's business.
 */
export async function findPayment(
  deps: Pick<TransactionHistoryDeps, 'history'>,
  accountId: string,
  swapTx: string,
): Promise<Transaction> {
  const rows = isSignatureText(swapTx) ? await deps.history.bySignature(accountId, swapTx) : [];
  const row = rows[0];
  if (!row) throw new AppError('not_found', 'No payment of this account has that swap_tx');
  return toTransaction(row);
}
