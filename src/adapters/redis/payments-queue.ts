import { randomUUID } from 'node:crypto';
import { Queue, type BackoffStrategy, type Job } from 'bullmq';
import type { LiveEvents, LiveSubscription } from './live-events.js';
import { createRedis } from './redis.js';

export const PAYMENTS_QUEUE = 'payments';

/**
 * The payments queue's own backoff type: BullMQ's built-in exponential backoff has no ceiling, so
 * after an hour-long RPC outage a payment's next try was an hour away. Served by
 * `paymentBackoffStrategy`, which every Worker of the queue must be given (workers/processors.ts).
 */
export const PAYMENT_BACKOFF = 'capped-exponential';
/** First retry delay; it doubles per failed attempt up to PAYMENT_RETRY_CAP_MS. */
export const PAYMENT_RETRY_BASE_MS = 500;
/** Longest pause between two tries of a payment, however long the outage lasted. */
export const PAYMENT_RETRY_CAP_MS = 60_000;
/**
 * Tries of a payment job before BullMQ would call it failed: in effect never (at one a minute,
 * ~1,900 years). Not Number.MAX_SAFE_INTEGER: BullMQ's Lua scripts keep it as a double and give
 * back a different number.
 */
export const PAYMENT_ATTEMPTS = 1_000_000_000;

/**
 * Milliseconds before the next try of a payment job that failed `attemptsMade` times (1 after the
 * first failure): 0.5 s, 1 s, 2 s, ... capped at 60 s, less up to 20% jitter so that payments
 * failing together (an RPC outage) do not all come back in the same instant. Never more than
 * PAYMENT_RETRY_CAP_MS.
 */
export function paymentRetryDelayMs(attemptsMade: number, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(attemptsMade, 1) - 1, 30); // 2^30 * 500 ms is past any cap
  const ceiling = Math.min(PAYMENT_RETRY_CAP_MS, PAYMENT_RETRY_BASE_MS * 2 ** exponent);
  return Math.round(ceiling * (1 - 0.2 * random()));
}

/** The Worker setting that serves PAYMENT_BACKOFF (BullMQ asks the Worker for custom types). */
export const paymentBackoffStrategy: BackoffStrategy = (attemptsMade) => paymentRetryDelayMs(attemptsMade);

/**
 * What `resubmit` did with an unfinished row's job: added it (there was none), revived it (it had
 * failed or completed, or was a delayed job from before the capped backoff, and blocked its id), or
 * left it alone (waiting, delayed or running: the queue has it).
 */
export type Resubmitted = 'added' | 'revived' | 'queued';

/**
 * A payments job: the outbox rows it settles. The paying requests' hand-offs gather into one job
 * (`chainTransactionIds`); the sweeper, a creator-fund batch, a swap and the jobs queued before
 * hand-offs gathered carry one row (`chainTransactionId`).
 */
export interface PaymentJob {
  chainTransactionId?: string;
  chainTransactionIds?: string[];
  /**
   * The PaymentsQueue (`origin`) whose requests handed the rows off and wait on them: a worker of
   * that very process tells them in-process (localPaymentSignals) instead of through Redis. Absent
   * on the sweeper's and the other producers' jobs, whose waiters may be anywhere.
   */
  origin?: string;
  /**
   * The rows as their commits wrote them (status `signed`), by id, for the job's first run: it
   * sends from these instead of reading the rows (one statement fewer per job). A retry, and a job
   * without them, reads the rows; every step after the read is guarded by the row's status and
   * signature, so one settled meanwhile (the sweeper's job) is left as it is.
   */
  signed?: Record<string, CarriedRow>;
}

/** An outbox row as its commit wrote it: what the payments worker's first look would read. */
export interface SignedOutboxRow {
  movementId: string;
  wire: Buffer;
  signature: string;
  lastValidBlockHeight: number;
}

/** A SignedOutboxRow in a job's JSON. */
interface CarriedRow {
  movementId: string;
  wire: string;
  signature: string;
  lastValidBlockHeight: number;
}

/** The signed rows a job carries, when its first run may use them (see PaymentJob `signed`). */
export function carriedRowsOf(job: PaymentJob, attemptsMade: number): Map<string, SignedOutboxRow> {
  const rows = new Map<string, SignedOutboxRow>();
  if (attemptsMade > 0 || !job.signed) return rows;
  for (const [id, row] of Object.entries(job.signed)) {
    rows.set(id, { ...row, wire: Buffer.from(row.wire, 'base64') });
  }
  return rows;
}

/**
 * The job id of one outbox row's settlement, and the key of its signals whichever job carries it:
 * adding it twice runs it once.
 */
export const paymentJobIdOf = (chainTransactionId: string): string => `pay-${chainTransactionId}`;

/** The outbox rows a payments job settles. */
export function paymentIdsOf(job: PaymentJob): string[] {
  return job.chainTransactionIds ?? (job.chainTransactionId ? [job.chainTransactionId] : []);
}

/** Rows one job carries at most: a full gathering leaves at once. */
export const MAX_PAYMENTS_PER_JOB = 256;

/**
 * What a waiting request hears about a payment job: the cluster executed it (with the signature
 * that landed), the job's run ended (the outbox row says how), or nothing within the wait.
 */
export type PaymentSignal = { kind: 'sent'; signature: string } | { kind: 'done' } | { kind: 'timeout' };

/** What the payments worker tells the waiting requests (see paymentSignalPublisher). */
export type PublishedPaymentSignal = Exclude<PaymentSignal, { kind: 'timeout' }>;

/**
 * Tells a payment job's signal to whoever may be waiting on it. `origin`: the job's (PaymentJob):
 * when it names this process's PaymentsQueue, the waiters are here and Redis is not needed.
 */
export type PaymentSignalPublisher = (
  jobId: string,
  signal: PublishedPaymentSignal,
  origin?: string,
) => Promise<void>;

/** Completed payments jobs kept at most (with their data), whatever their age. */
export const COMPLETED_KEPT = 10_000;

/** How long close() lets BullMQ finish its work with Redis before it drops the connections. */
const CLOSE_GRACE_MS = 3_000;

/** The live-events topic of payment signals: channel `${REDIS_PREFIX}:live:payment-signals`. */
export const PAYMENT_SIGNALS_TOPIC = 'payment-signals';

/**
 * The payments worker's side of the signals: one live event per signal (live-events.ts, so it
 * leaves with that process's other publishes of the same few milliseconds). Pub/sub delivers at
 * most once; a waiter that hears nothing reads the outbox row (awaitPayment), which is the truth
 * either way.
 *
 * Why not BullMQ's QueueEvents: it reads the queue's event stream, every event of every job
 * (added, waiting, active, progress, completed) in every API process with XREAD after XREAD: at
 * 100 paid posts a second that was about two Redis round trips per post and every event parsed, on
 * the API's event loop, which the feed reads share. A signal is one message per outcome.
 */
export function paymentSignalPublisher(liveEvents: Pick<LiveEvents, 'publish'>): PaymentSignalPublisher {
  return (jobId, signal) => liveEvents.publish(PAYMENT_SIGNALS_TOPIC, { jobId, ...signal });
}

/**
 * A payments worker's signals for the requests of its own process: a job whose `origin` is
 * `local.origin` is told through `local.deliver` (the process's waiters directly, or a message to
 * the thread that holds them); any other through `published`. In one process running the API and
 * the worker (npm start), a paid write's 'sent' so costs no PUBLISH, no Redis delivery and no JSON
 * on the API's event loop: per payment, two socket writes and two reads fewer.
 */
export function localPaymentSignals(
  local: { origin: string; deliver(jobId: string, signal: PublishedPaymentSignal): void },
  published: PaymentSignalPublisher,
): PaymentSignalPublisher {
  return async (jobId, signal, origin) => {
    if (origin !== undefined && origin === local.origin) local.deliver(jobId, signal);
    else await published(jobId, signal, origin);
  };
}

export interface PaymentWait {
  /**
   * Resolves once this process listens to the signals (the first wait subscribes; later ones find
   * it done): a signal published after that reaches the wait.
   */
  readonly listening: Promise<void>;
  readonly signal: Promise<PaymentSignal>;
  /** Stops waiting (the caller learnt the outcome elsewhere). */
  cancel(): void;
}

export interface PaymentsQueue {
  queue: Queue<PaymentJob>;
  /** This queue's own id, carried by the jobs its hand-offs make (PaymentJob `origin`). */
  readonly origin: string;
  /**
   * Wakes this process's waiters on `jobId` with a signal a worker of this process heard first
   * (localPaymentSignals): what the Redis subscription does for a published one.
   */
  deliver: (jobId: string, signal: PublishedPaymentSignal) => void;
  /**
   * Enqueues the settlement of one outbox row. The job id is derived from the row, so enqueueing
   * twice (an API retry, the worker's start-up sweep) runs it once.
   */
  enqueue(chainTransactionId: string): Promise<Job<PaymentJob>>;
  /**
   * Hands a just-committed row to the workers, in one job with the other hand-offs of the next
   * `handOffMs` (PAYMENT_HANDOFF_MS; the first starts the clock). A job costs the queue ~60 Redis
   * commands in ~10 round trips whatever it carries, and the worker settles a job's rows together
   * (one read, one send, one update per step): gathered, a paid post pays a share of that instead
   * of all of it. The wait is the paying request's, once. Resolves once the job is queued.
   *
   * A job of one row is the row's own (enqueue's id). A job of several has a fresh id, never a
   * row's: a row handed off again (a resumed request) may lead another gathering, whose other rows
   * an id taken from it would have dropped as a duplicate. So the sweeper may queue a row of a job
   * that runs long a second time: settling is idempotent.
   */
  handOff(chainTransactionId: string, signed?: SignedOutboxRow): Promise<void>;
  /** The job id enqueue() gives the settlement of this outbox row. */
  jobIdOf(chainTransactionId: string): string;
  /**
   * Makes sure an unfinished outbox row has a live job (the outbox sweeper): enqueues it when it
   * has none, and replaces a job that would block its id (failed, completed, or delayed under the
   * old uncapped backoff). Safe to run from several processes at once: a job removed twice or
   * added twice is one job (ids dedupe), and a running job is never removed (it holds a lock).
   */
  resubmit(chainTransactionId: string): Promise<Resubmitted>;
  /**
   * Starts listening for the job's signal ('sent' or 'done'), for at most `timeoutMs`. Once
   * `listening` resolved, a signal published later is heard (at most once: a caller that hears
   * nothing reads the stored state).
   */
  waitFor(jobId: string, timeoutMs: number): PaymentWait;
  close(): Promise<void>;
}

/**
 * The API's side of the payments queue. `liveEvents` (the process's own, whose subscriber
 * connection it shares) carries the workers' signals to the waiting requests.
 */
export function createPaymentsQueue(
  redisUrl: string,
  prefix: string,
  liveEvents: LiveEvents,
  handOffMs = 0,
): PaymentsQueue {
  const connection = createRedis(redisUrl, 'client');
  const queue = new Queue<PaymentJob>(PAYMENTS_QUEUE, { connection, prefix });
  // One listener dispatching by job id: hundreds of requests wait at once.
  const waiters = new Map<string, Set<(signal: PaymentSignal) => void>>();
  const origin = randomUUID();
  const deliver = (jobId: string, signal: PaymentSignal) => {
    for (const wake of waiters.get(jobId) ?? []) wake(signal);
  };
  // One subscription for the process, taken at the first wait and read for as long as it lasts.
  let signals: LiveSubscription<unknown> | undefined;
  const listen = (): Promise<void> => {
    if (!signals) {
      const subscription = liveEvents.subscribe<unknown>(PAYMENT_SIGNALS_TOPIC);
      signals = subscription;
      void (async () => {
        try {
          for await (const payload of subscription) {
            const signal = readSignal(payload);
            if (signal) deliver(signal.jobId, signal.signal);
          }
        } catch {
          // A failed SUBSCRIBE ends this subscription; the next wait takes a new one.
          await subscription.return();
        }
        if (signals === subscription) signals = undefined;
      })();
    }
    return signals.ready;
  };
  const jobIdOf = paymentJobIdOf;
  const add = (data: PaymentJob, jobId: string) =>
    queue.add('settle', data, {
      jobId,
      // Retryable failures (RPC down, timeouts, a blockhash that keeps expiring) are retried
      // for as long as the row is unfinished: a committed payment is never abandoned, and each
      // try re-sends the same bytes or re-signs. The pause is capped (paymentRetryDelayMs).
      attempts: PAYMENT_ATTEMPTS,
      backoff: { type: PAYMENT_BACKOFF },
      // A day of completed jobs to look at, but never more than the newest COMPLETED_KEPT: a job
      // carries its rows' signed bytes (~0.7 KB each), and a day of them at 50 paid posts/s would
      // hold gigabytes of Redis memory.
      removeOnComplete: { age: 24 * 3600, count: COMPLETED_KEPT },
      // Kept a day to look at; the sweeper replaces one whose row is still unfinished.
      removeOnFail: { age: 24 * 3600 },
    });
  const enqueue = (chainTransactionId: string) => add({ chainTransactionId }, jobIdOf(chainTransactionId));

  /** The hand-offs gathering now, and how to send them before their clock runs out. */
  let gathering:
    | { ids: string[]; signed: Record<string, CarriedRow>; queued: Promise<void>; leave: () => void }
    | undefined;
  const handOff = (chainTransactionId: string, signedRow?: SignedOutboxRow): Promise<void> => {
    if (!gathering) {
      const ids: string[] = [];
      const signed: Record<string, CarriedRow> = {};
      let leave!: () => void;
      const due = new Promise<void>((resolve) => (leave = resolve));
      const timer = setTimeout(leave, handOffMs);
      const batch = {
        ids,
        signed,
        leave,
        queued: due.then(async () => {
          clearTimeout(timer);
          if (gathering === batch) gathering = undefined;
          // One row: its own job id, so a repeat (the sweeper) finds it.
          const carried = Object.keys(signed).length > 0 ? { signed } : {};
          if (ids.length === 1)
            await add({ chainTransactionId: ids[0]!, origin, ...carried }, jobIdOf(ids[0]!));
          else await add({ chainTransactionIds: ids, origin, ...carried }, `batch-${randomUUID()}`);
        }),
      };
      gathering = batch;
    }
    const batch = gathering;
    batch.ids.push(chainTransactionId);
    if (signedRow)
      batch.signed[chainTransactionId] = { ...signedRow, wire: signedRow.wire.toString('base64') };
    if (batch.ids.length >= MAX_PAYMENTS_PER_JOB) {
      gathering = undefined;
      batch.leave();
    }
    return batch.queued;
  };

  return {
    queue,
    origin,
    deliver,
    jobIdOf,
    enqueue,
    handOff,
    resubmit: async (chainTransactionId) => {
      const job = await queue.getJob(jobIdOf(chainTransactionId));
      if (!job) {
        await enqueue(chainTransactionId);
        return 'added';
      }
      const state = await job.getState();
      const blocking =
        state === 'failed' ||
        state === 'completed' ||
        state === 'unknown' ||
        (state === 'delayed' && job.opts.backoff !== undefined && !isCapped(job.opts.backoff));
      if (!blocking) return 'queued';
      // remove() refuses a job another worker has just taken (locked): then it is live anyway.
      await job.remove().catch(() => undefined);
      await enqueue(chainTransactionId);
      return 'revived';
    },
    waitFor: (jobId, timeoutMs) => {
      let wake!: (signal: PaymentSignal) => void;
      const signal = new Promise<PaymentSignal>((resolve) => (wake = resolve));
      const listeners = waiters.get(jobId) ?? new Set();
      waiters.set(jobId, listeners);
      const stop = () => {
        clearTimeout(timer);
        listeners.delete(onSignal);
        if (listeners.size === 0 && waiters.get(jobId) === listeners) waiters.delete(jobId);
      };
      const onSignal = (s: PaymentSignal) => {
        stop();
        wake(s);
      };
      const timer = setTimeout(() => onSignal({ kind: 'timeout' }), timeoutMs);
      listeners.add(onSignal);
      const listening = listen();
      listening.catch(() => {}); // the caller awaits it; unobserved, a failure must not crash
      return {
        listening,
        signal,
        cancel: () => {
          stop();
          wake({ kind: 'timeout' });
        },
      };
    },
    close: async () => {
      // Hand-offs still gathering leave now: their requests wait on them.
      const last = gathering;
      gathering = undefined;
      last?.leave();
      // A Redis that hangs would hold a graceful close forever: past a few seconds, cut it.
      let timer: NodeJS.Timeout | undefined;
      const cut = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_GRACE_MS)));
      const graceful = Promise.allSettled([last?.queued]).then(() => queue.close());
      await Promise.race([graceful.catch(() => {}), cut]);
      clearTimeout(timer);
      connection.disconnect();
      await signals?.return();
    },
  };
}

/** A signal as paymentSignalPublisher sent it; anything else (another writer's junk) is dropped. */
function readSignal(payload: unknown): { jobId: string; signal: PublishedPaymentSignal } | undefined {
  if (typeof payload !== 'object' || payload === null) return undefined;
  const parsed = payload as { jobId?: unknown; kind?: unknown; signature?: unknown };
  if (typeof parsed.jobId !== 'string') return undefined;
  if (parsed.kind === 'done') return { jobId: parsed.jobId, signal: { kind: 'done' } };
  if (parsed.kind === 'sent' && typeof parsed.signature === 'string')
    return { jobId: parsed.jobId, signal: { kind: 'sent', signature: parsed.signature } };
  return undefined;
}

function isCapped(backoff: number | { type?: string }): boolean {
  return typeof backoff === 'object' && backoff.type === PAYMENT_BACKOFF;
}
