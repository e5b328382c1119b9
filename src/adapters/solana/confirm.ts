import { setTimeout as sleep } from 'node:timers/promises';
import { ChainError, classifyRpcFailure } from './chain-errors.js';
import type { Commitment, RpcClient, SendOptions, SignatureStatus } from './rpc-client.js';

/**
 * Send signed bytes and wait until they reach a commitment, by polling (no WebSocket), so one
 * process can keep ~1,000 transactions in flight with a few HTTP requests per poll.
 *
 * Invariant the outbox relies on: `blockhash_expired` is reported only when the transaction has not
 * landed and never can (block height past its lastValidBlockHeight, and a history-wide status
 * lookup finds nothing), so re-signing it with a new blockhash cannot pay twice.
 */

export interface SignedForSend {
  /** The exact signed bytes; re-sends repeat them, and the chain dedupes by signature. */
  readonly wire: Buffer;
  /** base58 of the first signature. */
  readonly signature: string;
  /** From getLatestBlockhash with the blockhash the transaction was signed over. */
  readonly lastValidBlockHeight: number;
}

export interface ConfirmOptions {
  readonly commitment: 'confirmed' | 'finalized';
  /** Between two status polls, in ms. @defaultValue 250 */
  readonly pollMs?: number;
  /** Re-send the same bytes while waiting (validators drop transactions under load). @defaultValue true */
  readonly resend?: boolean;
  /** Between two re-sends, in ms. @defaultValue 2_000 */
  readonly resendMs?: number;
  /** Skip simulation on the first send only; re-sends always skip it. @defaultValue false */
  readonly skipPreflight?: boolean;
  /** Bank the first send simulates against; it must know the blockhash. @defaultValue 'confirmed' */
  readonly preflightCommitment?: Commitment;
}

export interface Confirmed {
  readonly signature: string;
  readonly slot: number;
}

export type ConfirmOutcome =
  | ({ readonly ok: true } & Confirmed)
  | { readonly ok: false; readonly signature: string; readonly error: ChainError };

/** How often block height is read to detect expiry, in ms; expiry takes ~60 s, so 1 s late is fine. */
const HEIGHT_CHECK_MS = 1_000;
/** How long polling rides out retryable RPC failures before giving up on every pending item, in ms. */
const TRANSIENT_FAILURE_GRACE_MS = 15_000;
/** Body budget of one batched send: a validator refuses request bodies over 50 KiB. */
const MAX_SEND_BATCH_BYTES = 40_000;
/** JSON-RPC envelope around one base64 transaction in a batch, in bytes (generous). */
const SEND_CALL_OVERHEAD_BYTES = 160;

const RANK: Readonly<Record<Commitment, number>> = { processed: 0, confirmed: 1, finalized: 2 };

/** Sends one transaction and waits for it; throws the classified ChainError on any failure. */
export async function sendAndConfirm(
  rpc: RpcClient,
  tx: SignedForSend,
  options: ConfirmOptions,
): Promise<Confirmed> {
  const [outcome] = await confirmMany(rpc, [tx], options);
  if (!outcome) throw new Error('confirmMany returned no outcome');
  if (!outcome.ok) throw outcome.error;
  return { signature: outcome.signature, slot: outcome.slot };
}

/** One item on its way; `outcome` is set exactly once, when it is settled. */
interface Tracked {
  readonly item: SignedForSend;
  outcome?: ConfirmOutcome;
}

/**
 * Sends every item (batched HTTP requests), then polls all pending signatures with one
 * getSignatureStatuses per poll. Never throws for one item's failure: each outcome says how its
 * transaction ended, in the order of `items`.
 */
export async function confirmMany(
  rpc: RpcClient,
  items: readonly SignedForSend[],
  options: ConfirmOptions,
): Promise<ConfirmOutcome[]> {
  const { commitment, pollMs = 250, resend = true, resendMs = 2_000, skipPreflight = false } = options;
  const preflightCommitment = options.preflightCommitment ?? 'confirmed';
  const tracked: Tracked[] = items.map((item) => ({ item }));
  const pending = (): Tracked[] => tracked.filter((t) => t.outcome === undefined);

  const sendErrors = await sendAll(rpc, items, { skipPreflight, preflightCommitment });
  const expiredAtSend: Tracked[] = [];
  tracked.forEach((t, index) => {
    const error = sendErrors[index] ?? null;
    if (error === null || isAlreadyProcessed(error)) return;
    // A transaction resumed from the outbox may have landed long ago; its preflight then says
    // BlockhashNotFound. settleExpired's history lookup tells the two apart.
    if (error.kind === 'blockhash_expired') expiredAtSend.push(t);
    else t.outcome = failure(t.item, error);
  });
  try {
    await settleExpired(rpc, expiredAtSend, commitment);
  } catch (error) {
    // Left pending: polling sees them unlanded past their height and looks again.
    if (!(error instanceof ChainError)) throw error;
  }

  let nextHeightAt = 0;
  let nextResendAt = Date.now() + resendMs;
  let lastSuccessAt = Date.now();
  let waitMs = pollMs;
  for (let waiting = pending(); waiting.length > 0; waiting = pending()) {
    await sleep(waitMs);
    waitMs = pollMs;
    try {
      // Height is read before statuses: if it is past lastValidBlockHeight and the status read
      // afterwards is still empty, the transaction can no longer land.
      let height: number | undefined;
      if (Date.now() >= nextHeightAt) {
        height = await rpc.getBlockHeight(commitment);
        nextHeightAt = Date.now() + HEIGHT_CHECK_MS;
      }
      const statuses = await rpc.getSignatureStatuses(waiting.map((t) => t.item.signature));
      lastSuccessAt = Date.now();
      const expired: Tracked[] = [];
      waiting.forEach((t, k) => {
        const status = statuses[k] ?? null;
        if (status !== null) settleStatus(t, status, commitment);
        else if (height !== undefined && height > t.item.lastValidBlockHeight) expired.push(t);
      });
      await settleExpired(rpc, expired, commitment);
    } catch (error) {
      if (!(error instanceof ChainError)) throw error;
      if (!error.retryable || Date.now() - lastSuccessAt > TRANSIENT_FAILURE_GRACE_MS) {
        for (const t of pending()) t.outcome = failure(t.item, error);
      } else if (error.retryAfterSeconds !== undefined) {
        waitMs = Math.max(pollMs, error.retryAfterSeconds * 1000);
      }
    }
    const unsettled = pending();
    if (resend && unsettled.length > 0 && Date.now() >= nextResendAt) {
      // Re-sends skip preflight (the first send already simulated) and their errors are ignored:
      // polling alone decides each outcome.
      await sendAll(
        rpc,
        unsettled.map((t) => t.item),
        { skipPreflight: true, preflightCommitment },
      );
      nextResendAt = Date.now() + resendMs;
    }
  }
  return tracked.map((t) => {
    if (!t.outcome) throw new Error(`confirmMany left ${t.item.signature} without an outcome`);
    return t.outcome;
  });
}

/**
 * A landed transaction counts only once its status reaches the commitment, failures included: the
 * outbox reverses ledger legs on failure, which must never happen on the strength of a fork.
 */
function settleStatus(t: Tracked, status: SignatureStatus, commitment: Commitment): void {
  if (RANK[status.confirmationStatus] < RANK[commitment]) return;
  const { signature } = t.item;
  t.outcome =
    status.err === null
      ? { ok: true, signature, slot: status.slot }
      : failure(
          t.item,
          classifyRpcFailure({ source: 'status', err: status.err }, `transaction ${signature}`),
        );
}

/** Last look, history-wide, before calling items expired: anything found there is settled normally. */
async function settleExpired(
  rpc: RpcClient,
  expired: readonly Tracked[],
  commitment: Commitment,
): Promise<void> {
  if (expired.length === 0) return;
  const statuses = await rpc.getSignatureStatuses(
    expired.map((t) => t.item.signature),
    { searchTransactionHistory: true },
  );
  expired.forEach((t, k) => {
    const status = statuses[k] ?? null;
    // Landed after all: settle it now, or keep polling until it reaches the commitment.
    if (status !== null) return settleStatus(t, status, commitment);
    const { signature, lastValidBlockHeight } = t.item;
    t.outcome = failure(
      t.item,
      new ChainError(
        'blockhash_expired',
        `transaction ${signature} expired unlanded (block height passed ${lastValidBlockHeight}); re-sign it with a new blockhash`,
      ),
    );
  });
}

function failure(item: SignedForSend, error: ChainError): ConfirmOutcome {
  return { ok: false, signature: item.signature, error };
}

/**
 * Sends every wire, grouping them into batches under the request body limit. Returns one entry per
 * item: null when the node accepted it, else the ChainError of that item (or of its whole batch).
 */
async function sendAll(
  rpc: RpcClient,
  items: readonly SignedForSend[],
  options: SendOptions,
): Promise<Array<ChainError | null>> {
  const groups: SignedForSend[][] = [];
  let group: SignedForSend[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = Math.ceil(item.wire.length / 3) * 4 + SEND_CALL_OVERHEAD_BYTES;
    if (group.length > 0 && bytes + size > MAX_SEND_BATCH_BYTES) {
      groups.push(group);
      group = [];
      bytes = 0;
    }
    group.push(item);
    bytes += size;
  }
  if (group.length > 0) groups.push(group);

  const config = { encoding: 'base64', ...options };
  const answers = await Promise.all(
    groups.map(async (members): Promise<Array<ChainError | null>> => {
      try {
        const [only] = members;
        if (only && members.length === 1) {
          await rpc.sendTransaction(only.wire, options);
          return [null];
        }
        const results = await rpc.batch<string>(
          members.map((m) => ({ method: 'sendTransaction', params: [m.wire.toString('base64'), config] })),
        );
        return results.map((r) => ('error' in r ? r.error : null));
      } catch (error) {
        if (!(error instanceof ChainError)) throw error;
        return members.map(() => error);
      }
    }),
  );
  return answers.flat();
}

/** Preflight of a transaction that already landed: it is on chain, so wait for its status. */
function isAlreadyProcessed(error: ChainError): boolean {
  return error.kind === 'program_error' && error.err === 'AlreadyProcessed';
}
