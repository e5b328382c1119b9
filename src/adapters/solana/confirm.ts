import type { Commitment, RpcClient } from './rpc-client.js';
import {
  createSignatureWatcher,
  isAlreadyProcessed,
  sendWires,
  type Confirmed,
  type ConfirmOutcome,
  type SignedForSend,
} from './signature-watcher.js';

export type { Confirmed, ConfirmOutcome, SignedForSend } from './signature-watcher.js';

/**
 * Send signed bytes and wait until they reach a commitment, by polling (no WebSocket), so one
 * process can keep ~1,000 transactions in flight with a few HTTP requests per poll. The waiting
 * is a SignatureWatcher's (see signature-watcher.ts, which also states the expiry invariant).
 */

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

/**
 * Sends every item (batched HTTP requests), then waits for all of them with one watcher. Never
 * throws for one item's failure: each outcome says how its transaction ended, in the order of
 * `items`.
 */
export async function confirmMany(
  rpc: RpcClient,
  items: readonly SignedForSend[],
  options: ConfirmOptions,
): Promise<ConfirmOutcome[]> {
  const { commitment, pollMs = 250, resend = true, resendMs = 2_000, skipPreflight = false } = options;
  const sendErrors = await sendWires(rpc, items, {
    skipPreflight,
    preflightCommitment: options.preflightCommitment ?? 'confirmed',
  });
  const watcher = createSignatureWatcher(rpc, { pollMs, resend, resendMs });
  try {
    return await Promise.all(
      items.map(async (item, index): Promise<ConfirmOutcome> => {
        const error = sendErrors[index] ?? null;
        // A transaction resumed from the outbox may have landed long ago; its preflight then says
        // BlockhashNotFound. The watcher's expiry check (a history-wide lookup) tells the two apart.
        if (error === null || isAlreadyProcessed(error) || error.kind === 'blockhash_expired') {
          return watcher.watch(item, commitment);
        }
        return { ok: false, signature: item.signature, error };
      }),
    );
  } finally {
    watcher.close();
  }
}
