import { ChainError, classifyRpcFailure } from './chain-errors.js';
import {
  MAX_SIGNATURES_PER_STATUS_CALL,
  readStatuses,
  type BatchItem,
  type Commitment,
  type RpcCall,
  type RpcClient,
  type SendOptions,
  type SignatureStatus,
} from './rpc-client.js';

/**
 * One poller for every transaction a process is waiting on. Each `watch` joins a shared set; one
 * loop reads all their statuses with getSignatureStatuses (256 per call) every `pollMs`, re-sends
 * the bytes of those not seen yet every `resendMs`, and reads the block height once a second to
 * detect expiry. A payments worker with hundreds of payments in flight so makes a few RPC calls
 * per poll instead of hundreds.
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

export interface Confirmed {
  readonly signature: string;
  readonly slot: number;
}

export type ConfirmOutcome =
  | ({ readonly ok: true } & Confirmed)
  | { readonly ok: false; readonly signature: string; readonly error: ChainError };

export interface WatcherOptions {
  /** Between two status polls, in ms. @defaultValue 100 */
  readonly pollMs?: number;
  /**
   * Between two polls of the transactions waited on at `processed` only, in ms: a client is
   * waiting for those (a paid write answers once its payment executed), and a node usually executes
   * a transaction within milliseconds of receiving it. @defaultValue 10
   */
  readonly processedPollMs?: number;
  /**
   * How soon a new `processed` watch gets its first look, in ms. Watches usually arrive in bursts
   * (one batched send settles many), so one status call soon after a burst covers all of it; on a
   * node that executes on receipt, most are already there. @defaultValue 1
   */
  readonly firstLookMs?: number;
  /** Re-send the bytes of a transaction not seen yet (validators drop under load). @defaultValue true */
  readonly resend?: boolean;
  /** Between two re-sends of one transaction, in ms. @defaultValue 2_000 */
  readonly resendMs?: number;
  /**
   * Ask for the statuses of a first send in the same batched request (see RpcPacing.lookOnSend):
   * a watch that follows the send settles from that answer when it reached the watch's commitment,
   * with no status poll of its own. @defaultValue false
   */
  readonly lookOnSend?: boolean;
}

export interface SignatureWatcher {
  /**
   * Resolves once the transaction (already sent) reaches `commitment`, successful or failed on
   * chain; or with `blockhash_expired` when it can no longer land; or with the RPC failure that
   * lasted past the grace period. Never rejects.
   */
  watch(item: SignedForSend, commitment: Commitment): Promise<ConfirmOutcome>;
  /**
   * Sends one transaction, in one batched request with every other send of the same options made
   * in the same turn of the event loop (a worker settling hundreds of payments sends them in a few
   * requests). Resolves with null when the node accepted it, else its ChainError.
   */
  send(item: SignedForSend, options: SendOptions): Promise<ChainError | null>;
  /**
   * Changes the poll intervals of a running watcher: the cluster's defaults are known only once
   * the bootstrap has read its genesis hash (a public RPC rate-limits a 10 ms poll).
   */
  tune(intervals: { pollMs: number; processedPollMs: number; lookOnSend?: boolean }): void;
  /** Settles every watch still open with an `rpc_unavailable` failure and stops polling. */
  close(): void;
}

/** How often block height is read to detect expiry, in ms; expiry takes ~60 s, so 1 s late is fine. */
const HEIGHT_CHECK_MS = 1_000;
/** How long polling rides out retryable RPC failures before failing every watch, in ms. */
const TRANSIENT_FAILURE_GRACE_MS = 15_000;
/** Body budget of one batched send: a validator refuses request bodies over 50 KiB. */
const MAX_SEND_BATCH_BYTES = 40_000;
/** JSON-RPC envelope around one base64 transaction in a batch, in bytes (generous). */
const SEND_CALL_OVERHEAD_BYTES = 160;
/** A base58 signature in a getSignatureStatuses call, quotes and comma included (generous). */
const STATUS_CALL_BYTES_PER_SIGNATURE = 92;
/**
 * Statuses a send's own request answered, kept for the watch that follows the send. A send whose
 * watch never comes (its caller failed between the two) leaves one; past this many they are dropped.
 */
const MAX_LOOKED_ON_SEND = 10_000;

const RANK: Readonly<Record<Commitment, number>> = { processed: 0, confirmed: 1, finalized: 2 };

interface Watch {
  readonly item: SignedForSend;
  readonly commitment: Commitment;
  readonly settle: (outcome: ConfirmOutcome) => void;
  lastSentAt: number;
  /** Whether a status poll has looked for it yet. */
  looked: boolean;
}

export function createSignatureWatcher(rpc: RpcClient, options: WatcherOptions = {}): SignatureWatcher {
  let { pollMs = 100, processedPollMs = 10, lookOnSend = false } = options;
  const { firstLookMs = 1, resend = true, resendMs = 2_000 } = options;
  const watches = new Set<Watch>();
  let polling = false;
  let closed = false;
  /** Ends the poll loop's current wait early (a new `processed` watch), when it is waiting. */
  let hurry: (() => void) | undefined;
  const waitFor = (ms: number, hurriable: boolean) =>
    new Promise<void>((resolve) => {
      let timer = setTimeout(done, ms);
      let soonest = Date.now() + ms;
      function done() {
        if (hurry === shorten) hurry = undefined;
        clearTimeout(timer);
        resolve();
      }
      // Re-arms the one timer earlier; once done, it no longer belongs to the loop's wait.
      const shorten = () => {
        if (!hurriable) return;
        const at = Date.now() + firstLookMs;
        if (at >= soonest) return;
        soonest = at;
        clearTimeout(timer);
        timer = setTimeout(done, firstLookMs);
      };
      hurry = shorten;
    });
  const urgent = (watch: Watch) => watch.commitment === 'processed';
  /** By signature: what the send's own request saw right after the send (lookOnSend). */
  const lookedOnSend = new Map<string, SignatureStatus>();

  const outgoing = new Map<
    string,
    Array<{ item: SignedForSend; done: (error: ChainError | null) => void }>
  >();
  const sendBatch = (key: string, options: SendOptions) => {
    const batch = outgoing.get(key) ?? [];
    outgoing.delete(key);
    sendAndLook(
      rpc,
      batch.map((b) => b.item),
      options,
      lookOnSend,
    ).then(
      (sent) =>
        batch.forEach((b, k) => {
          const status = sent[k]?.status;
          if (status) {
            if (lookedOnSend.size >= MAX_LOOKED_ON_SEND) lookedOnSend.clear();
            lookedOnSend.set(b.item.signature, status);
          }
          b.done(sent[k]?.error ?? null);
        }),
      (error: unknown) => {
        const chainError =
          error instanceof ChainError
            ? error
            : new ChainError('rpc_unavailable', String(error), { cause: error });
        for (const b of batch) b.done(chainError);
      },
    );
  };

  const finish = (watch: Watch, outcome: ConfirmOutcome) => {
    if (watches.delete(watch)) watch.settle(outcome);
  };

  /** A landed transaction counts once its status reaches the watch's commitment, failures included. */
  const settleStatus = (watch: Watch, status: SignatureStatus) => {
    if (RANK[status.confirmationStatus] < RANK[watch.commitment]) return;
    finish(watch, outcomeOf(watch.item, status));
  };

  /** Last look, history-wide, before calling watches expired: anything found there is settled normally. */
  const settleExpired = async (expired: readonly Watch[]) => {
    if (expired.length === 0) return;
    const statuses = await statusesOf(
      rpc,
      expired.map((w) => w.item.signature),
      true,
    );
    expired.forEach((watch, k) => {
      const status = statuses[k] ?? null;
      if (status !== null) return settleStatus(watch, status);
      const { signature, lastValidBlockHeight } = watch.item;
      finish(
        watch,
        failure(
          watch.item,
          new ChainError(
            'blockhash_expired',
            `transaction ${signature} expired unlanded (block height passed ${lastValidBlockHeight}); re-sign it with a new blockhash`,
          ),
        ),
      );
    });
  };

  const poll = async () => {
    polling = true;
    let nextHeightAt = 0;
    let lastSuccessAt = Date.now();
    let waitMs = pollMs;
    let fullRoundAt = 0;
    try {
      while (watches.size > 0 && !closed) {
        // A backoff (the node asked to wait) is kept; otherwise a client waiting shortens the wait.
        const backingOff = waitMs > pollMs;
        const urgentNow = !backingOff && [...watches].some(urgent);
        const unlooked = urgentNow && [...watches].some((w) => urgent(w) && !w.looked);
        await waitFor(unlooked ? firstLookMs : urgentNow ? processedPollMs : waitMs, !backingOff);
        waitMs = pollMs;
        // Every watch once per pollMs; in between, only those a client is waiting on.
        const full = Date.now() >= fullRoundAt;
        if (full) fullRoundAt = Date.now() + pollMs;
        const round = full ? [...watches] : [...watches].filter(urgent);
        if (round.length === 0) continue;
        try {
          // Height is read before statuses: if it is past lastValidBlockHeight and the status read
          // afterwards is still empty, the transaction can no longer land.
          let height: number | undefined;
          if (Date.now() >= nextHeightAt) {
            height = await rpc.getBlockHeight('confirmed');
            nextHeightAt = Date.now() + HEIGHT_CHECK_MS;
          }
          const statuses = await statusesOf(
            rpc,
            round.map((w) => w.item.signature),
            false,
          );
          lastSuccessAt = Date.now();
          const expired: Watch[] = [];
          round.forEach((watch, k) => {
            watch.looked = true;
            const status = statuses[k] ?? null;
            if (status !== null) settleStatus(watch, status);
            else if (height !== undefined && height > watch.item.lastValidBlockHeight) expired.push(watch);
          });
          await settleExpired(expired);
        } catch (error) {
          const chainError =
            error instanceof ChainError
              ? error
              : new ChainError('rpc_unavailable', `status polling failed: ${String(error)}`, {
                  cause: error,
                });
          if (!chainError.retryable || Date.now() - lastSuccessAt > TRANSIENT_FAILURE_GRACE_MS) {
            for (const watch of round) finish(watch, failure(watch.item, chainError));
          } else if (chainError.retryAfterSeconds !== undefined) {
            waitMs = Math.max(pollMs, chainError.retryAfterSeconds * 1000);
          }
        }
        if (!resend) continue;
        const now = Date.now();
        const stale = [...watches].filter((w) => now - w.lastSentAt >= resendMs);
        if (stale.length === 0) continue;
        for (const watch of stale) watch.lastSentAt = now;
        // Re-sends skip preflight (the first send already simulated) and their errors are ignored:
        // polling alone decides each outcome.
        await sendWires(
          rpc,
          stale.map((w) => w.item),
          { skipPreflight: true, preflightCommitment: 'confirmed' },
        ).catch(() => []);
      }
    } finally {
      polling = false;
    }
  };

  return {
    tune: (intervals) => {
      ({ pollMs, processedPollMs } = intervals);
      lookOnSend = intervals.lookOnSend ?? lookOnSend;
    },
    watch: (item, commitment) =>
      new Promise<ConfirmOutcome>((settle) => {
        if (closed) {
          settle(failure(item, new ChainError('rpc_unavailable', 'the signature watcher is closed')));
          return;
        }
        // What the send's own request saw counts as this watch's first look (used once).
        const looked = lookedOnSend.get(item.signature);
        lookedOnSend.delete(item.signature);
        if (looked && RANK[looked.confirmationStatus] >= RANK[commitment]) {
          settle(outcomeOf(item, looked));
          return;
        }
        const watch: Watch = { item, commitment, settle, lastSentAt: Date.now(), looked: false };
        watches.add(watch);
        if (!polling) void poll();
        else if (urgent(watch)) hurry?.();
      }),
    send: (item, options) =>
      new Promise((done) => {
        const key = JSON.stringify(options);
        const batch = outgoing.get(key);
        if (batch) return void batch.push({ item, done });
        outgoing.set(key, [{ item, done }]);
        setImmediate(() => sendBatch(key, options));
      }),
    close: () => {
      closed = true;
      const error = new ChainError('rpc_unavailable', 'the signature watcher was closed while waiting');
      for (const watch of [...watches]) finish(watch, failure(watch.item, error));
    },
  };
}

/** getSignatureStatuses for any number of signatures: chunks of 256, in parallel. */
async function statusesOf(
  rpc: RpcClient,
  signatures: readonly string[],
  searchTransactionHistory: boolean,
): Promise<Array<SignatureStatus | null>> {
  const chunks: string[][] = [];
  for (let from = 0; from < signatures.length; from += MAX_SIGNATURES_PER_STATUS_CALL) {
    chunks.push(signatures.slice(from, from + MAX_SIGNATURES_PER_STATUS_CALL));
  }
  const answers = await Promise.all(
    chunks.map((chunk) =>
      rpc.getSignatureStatuses(chunk, searchTransactionHistory ? { searchTransactionHistory } : undefined),
    ),
  );
  return answers.flat();
}

function failure(item: SignedForSend, error: ChainError): ConfirmOutcome {
  return { ok: false, signature: item.signature, error };
}

/** A landed transaction's outcome: ok, or the failure its status carries. */
function outcomeOf(item: SignedForSend, status: SignatureStatus): ConfirmOutcome {
  const { signature } = item;
  return status.err === null
    ? { ok: true, signature, slot: status.slot }
    : failure(item, classifyRpcFailure({ source: 'status', err: status.err }, `transaction ${signature}`));
}

/**
 * Sends every wire, grouping them into batches under the request body limit. Returns one entry per
 * item: null when the node accepted it, else the ChainError of that item (or of its whole batch).
 */
export async function sendWires(
  rpc: RpcClient,
  items: readonly SignedForSend[],
  options: SendOptions,
): Promise<Array<ChainError | null>> {
  return (await sendAndLook(rpc, items, options, false)).map((sent) => sent.error);
}

/** One item of sendAndLook: its send's error (null: accepted) and what the look saw of it. */
interface Sent {
  error: ChainError | null;
  /** Its status right after the send (null: not seen); undefined when not asked or not answered. */
  status?: SignatureStatus | null;
}

/**
 * sendWires, and with `look` each batch also asks getSignatureStatuses for its signatures after
 * its sends, in the same request: a node that handles a batch in order and executes on receipt
 * answers `processed` there. The look is a hint only: a failed or malformed one is ignored.
 */
async function sendAndLook(
  rpc: RpcClient,
  items: readonly SignedForSend[],
  options: SendOptions,
  look: boolean,
): Promise<Sent[]> {
  const groups: SignedForSend[][] = [];
  let group: SignedForSend[] = [];
  let bytes = 0;
  for (const item of items) {
    const size =
      Math.ceil(item.wire.length / 3) * 4 +
      SEND_CALL_OVERHEAD_BYTES +
      (look ? STATUS_CALL_BYTES_PER_SIGNATURE : 0);
    if (
      group.length > 0 &&
      (bytes + size > MAX_SEND_BATCH_BYTES || group.length >= MAX_SIGNATURES_PER_STATUS_CALL)
    ) {
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
    groups.map(async (members): Promise<Sent[]> => {
      try {
        const [only] = members;
        if (only && members.length === 1 && !look) {
          await rpc.sendTransaction(only.wire, options);
          return [{ error: null }];
        }
        const calls: RpcCall[] = members.map((m) => ({
          method: 'sendTransaction',
          params: [m.wire.toString('base64'), config],
        }));
        if (look) {
          calls.push({
            method: 'getSignatureStatuses',
            params: [members.map((m) => m.signature), { searchTransactionHistory: false }],
          });
        }
        const results = await rpc.batch<unknown>(calls);
        const statuses = look ? lookedStatuses(results[members.length], members.length) : undefined;
        return members.map((_, k) => {
          const result = results[k];
          return { error: result && 'error' in result ? result.error : null, status: statuses?.[k] };
        });
      } catch (error) {
        if (!(error instanceof ChainError)) throw error;
        return members.map(() => ({ error }));
      }
    }),
  );
  return answers.flat();
}

/** The statuses a batch's look answered, or undefined when it failed or made no sense. */
function lookedStatuses(
  answer: BatchItem<unknown> | undefined,
  count: number,
): Array<SignatureStatus | null> | undefined {
  if (!answer || 'error' in answer) return undefined;
  try {
    return readStatuses(answer.result, count);
  } catch {
    return undefined;
  }
}

/** Preflight of a transaction that already landed: it is on chain, so wait for its status. */
export function isAlreadyProcessed(error: ChainError): boolean {
  return error.kind === 'program_error' && error.err === 'AlreadyProcessed';
}
