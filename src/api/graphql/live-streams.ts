import type { ServerResponse } from 'node:http';
import type { FastifyRequest } from 'fastify';
import { authenticate } from '../../domain/auth/api-keys.service.js';
import { AppError } from '../../domain/errors.js';
import { EVERYTHING } from '../../app/change-signals.js';
import type { ApiDeps } from '../../app/api-deps.js';

/** Open subscription streams (SSE) one account may hold on one API process. */
export const MAX_STREAMS_PER_ACCOUNT = 5;
/**
 * How often every open stream's key is checked again. A revocation normally ends its streams at
 * once (the `identity` change signal, from this process or any other); this bounds it when that
 * message is lost.
 */
const RECHECK_EVERY_MS = 2_000;

/** A stream admitted for one account: hand it its response once Yoga answers, or release it. */
export interface StreamSlot {
  /** The answer is a stream: it counts until it closes and ends when its key is revoked. */
  attach(raw: ServerResponse): void;
  /** The answer was not a stream (an error, a single result): the slot is free again. */
  release(): void;
}

export interface LiveStreams {
  /**
   * A slot for a request that asks for an event stream, or undefined for any other request.
   * Refuses (429 rate_limited) an account that already holds MAX_STREAMS_PER_ACCOUNT streams,
   * before anything is subscribed. A request without a valid key gets an uncounted slot (its
   * answer is one error event; every subscription needs a key), so closeAll still cuts it.
   */
  admit(req: FastifyRequest): Promise<StreamSlot | undefined>;
  /** Cuts every open stream (the server is closing; clients reconnect). */
  closeAll(): void;
}

interface OpenStream {
  /** The key's account and the header it came with; absent for a stream without a valid key. */
  owner?: { accountId: string; authorization: string };
  raw?: ServerResponse;
}

/**
 * Subscriptions stream until the client leaves, so two things must be enforced while they run,
 * not only when they start: a revoked key's streams end (a stolen key must stop reading the live
 * feed once its owner revokes it), and one account cannot hold connections and Redis listeners
 * without bound. A cut stream ends as a client disconnect ends it (Yoga unsubscribes); the client's
 * reconnect is then answered 401 for a revoked key.
 */
export function createLiveStreams(deps: Pick<ApiDeps, 'apiKeys' | 'changes' | 'logger'>): LiveStreams {
  const open = new Set<OpenStream>();
  let timer: NodeJS.Timeout | undefined;
  let unsubscribe: (() => void) | undefined;
  let checking = false;
  /** A change arrived during a check (which may have read the key before it): check again. */
  let again = false;

  const countOf = (accountId: string) => {
    let count = 0;
    for (const stream of open) if (stream.owner?.accountId === accountId) count += 1;
    return count;
  };

  const cut = (stream: OpenStream) => {
    open.delete(stream);
    stream.raw?.destroy();
    if (open.size === 0) stopWatching();
  };

  /** Every distinct key of the open streams, authenticated again (a cached lookup, usually). */
  const recheck = async (): Promise<void> => {
    if (checking) {
      again = true;
      return;
    }
    checking = true;
    again = false;
    try {
      const verdicts = new Map<string, Promise<boolean>>();
      for (const { owner } of open) {
        if (owner && !verdicts.has(owner.authorization)) {
          verdicts.set(owner.authorization, stillValid(owner.authorization));
        }
      }
      for (const stream of [...open]) {
        if (stream.owner && !(await verdicts.get(stream.owner.authorization))) cut(stream);
      }
    } finally {
      checking = false;
    }
    if (again && open.size > 0) return recheck();
  };

  const stillValid = async (authorization: string) => {
    try {
      await authenticate(deps.apiKeys, authorization);
      return true;
    } catch (error) {
      if (error instanceof AppError && error.code === 'unauthorized') return false;
      // A store that cannot answer (Postgres down) is no verdict: the next check decides.
      deps.logger.warn({ err: error }, 'live stream: key not rechecked');
      return true;
    }
  };

  const watch = () => {
    if (timer) return;
    const run = () => {
      recheck().catch((err: unknown) => deps.logger.warn({ err }, 'live stream recheck failed'));
    };
    timer = setInterval(run, RECHECK_EVERY_MS);
    timer.unref();
    // The store's own cache marks its rows stale on the same signal before this listener runs (it
    // subscribed first) and never answers a stale row, so the recheck reads the revoked row.
    unsubscribe = deps.changes.onChange((keys) => {
      if (keys.includes('identity') || keys.includes(EVERYTHING)) run();
    });
  };

  const stopWatching = () => {
    clearInterval(timer);
    timer = undefined;
    unsubscribe?.();
    unsubscribe = undefined;
  };

  return {
    admit: async (req) => {
      if (!req.headers.accept?.includes('text/event-stream')) return undefined;
      const stream: OpenStream = {};
      const authorization = req.headers.authorization;
      // A bad key is Yoga's to refuse (401, as for any request); it holds no counted slot.
      const viewer = authorization
        ? await authenticate(deps.apiKeys, authorization).catch((error: unknown) => {
            if (error instanceof AppError && error.code === 'unauthorized') return undefined;
            throw error;
          })
        : undefined;
      if (viewer && authorization) {
        if (countOf(viewer.accountId) >= MAX_STREAMS_PER_ACCOUNT) {
          throw new AppError(
            'rate_limited',
            `An account may hold at most ${MAX_STREAMS_PER_ACCOUNT} open subscriptions; close one before opening another`,
          );
        }
        stream.owner = { accountId: viewer.accountId, authorization };
      }
      // Counted from now, before Yoga subscribes: concurrent requests cannot all pass the check.
      open.add(stream);
      watch();
      return {
        attach: (raw) => {
          if (!open.has(stream)) {
            raw.destroy();
            return;
          }
          stream.raw = raw;
          raw.once('close', () => {
            open.delete(stream);
            if (open.size === 0) stopWatching();
          });
        },
        release: () => {
          open.delete(stream);
          if (open.size === 0) stopWatching();
        },
      };
    },
    closeAll: () => {
      for (const stream of [...open]) cut(stream);
      stopWatching();
    },
  };
}
