import type { ServerResponse } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { ExecutionArgs, ExecutionResult } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import { authenticate } from '../../domain/auth/api-keys.service.js';
import { AppError } from '../../domain/errors.js';
import { EVERYTHING } from '../../app/change-signals.js';
import type { ApiDeps } from '../../app/api-deps.js';
import type { ErrorBody } from '../error-map.js';
import type { StreamSlots } from '../stream-slots.js';
import { toErrorResponse } from '../error-response.js';
import type { GraphQLContext } from './context.js';
import { toGraphqlError } from './errors.js';
import type { GraphqlAnswer } from './fast-path.js';

/** Open subscription streams (SSE) one account may hold on one API process. */
export const MAX_STREAMS_PER_ACCOUNT = 5;
/**
 * How often every open stream's key is checked again. A revocation normally ends its streams at
 * once (the `identity` change signal, from this process or any other); this bounds it when that
 * message is lost.
 */
const RECHECK_EVERY_MS = 2_000;
/**
 * A stream whose answer has waited this long for its client to read (its buffer full, no 'drain')
 * is cut: the client is gone without a word or reads far slower than its events come, and it
 * would otherwise hold its slot, its connection and what is buffered for good. Checked every
 * RECHECK_EVERY_MS, so a stuck stream ends within STUCK_STREAM_MS + RECHECK_EVERY_MS.
 */
export const STUCK_STREAM_MS = 30_000;

/** What the route answers instead of Yoga's answer to a subscription it refuses. */
export interface StreamRefusal {
  status: number;
  body: ErrorBody;
}

/** `hold`: a stream served outside GraphQL (REST GET /events/stream) takes a slot as a subscription does. */
export interface LiveStreams extends StreamSlots {
  /**
   * The Yoga plugin that admits every subscription when Yoga is about to subscribe it, whatever
   * the request's transport (POST or GET, any Accept header): the operation decides, not a
   * header. It refuses (429 rate_limited) an account that already holds MAX_STREAMS_PER_ACCOUNT
   * streams before anything is subscribed. A subscription without a key takes an uncounted slot
   * (its answer is one error: every subscription field needs a key), so closeAll still cuts it.
   */
  plugin: Plugin;
  /**
   * Once Yoga answered `req`: an event stream holds its slot until its response closes (and is cut
   * when its key is revoked); any other answer frees it and ends what Yoga subscribed. Returns what
   * to answer instead of Yoga's answer: the refusal, or a JSON 406 naming the transport when Yoga
   * could not stream the subscription in the format asked for (it answers an empty 406).
   */
  settle(req: FastifyRequest, answer: GraphqlAnswer, raw: ServerResponse): StreamRefusal | undefined;
  /** Yoga failed on `req`: its slot, if it took one, is free again. */
  abandon(req: FastifyRequest): void;
  /** Cuts every open stream (the server is closing; clients reconnect). */
  closeAll(): void;
}

/** Yoga streams a subscription as server-sent events only (never as multipart/mixed). */
const NOT_STREAMABLE: StreamRefusal = {
  status: 406,
  body: {
    error: 'not_acceptable',
    message:
      'Subscriptions are streamed as server-sent events: send Accept: text/event-stream (or */*, or no Accept header)',
  },
};

/** What the plugin reads of Yoga's onSubscribe event (envelop types the context generically). */
interface SubscribeEvent {
  args: ExecutionArgs;
  setResultAndStopExecution: (result: ExecutionResult) => void;
}

interface OpenStream {
  /** The key's account and the header it came with; absent for a subscription without a key. */
  owner?: { accountId: string; authorization: string };
  raw?: ServerResponse;
  /** When a check first found its answer waiting for the client to read (Date.now()); reset by 'drain'. */
  stuckSince?: number;
  /** What Yoga subscribed, ended by hand when Yoga does not stream it (its 406 leaves it open). */
  events?: AsyncIterator<unknown>;
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

  const free = (stream: OpenStream) => {
    open.delete(stream);
    if (open.size === 0) stopWatching();
  };

  const cut = (stream: OpenStream) => {
    free(stream);
    stream.raw?.destroy();
  };

  /** Freed, and what Yoga subscribed for it ended: nothing will stream it. */
  const drop = (stream: OpenStream) => {
    free(stream);
    stream.events?.return?.().catch((err: unknown) => deps.logger.warn({ err }, 'live stream: not ended'));
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

  /** Cuts every stream whose answer has waited STUCK_STREAM_MS for its client to read. */
  const cutStuck = () => {
    const now = Date.now();
    for (const stream of [...open]) {
      if (!stream.raw?.writableNeedDrain) {
        stream.stuckSince = undefined;
        continue;
      }
      stream.stuckSince ??= now;
      if (now - stream.stuckSince >= STUCK_STREAM_MS) {
        deps.logger.info(
          { account: stream.owner?.accountId, buffered: stream.raw.writableLength },
          `live stream cut: its client read nothing for ${STUCK_STREAM_MS / 1000} s`,
        );
        cut(stream);
      }
    }
  };

  /** `stream` streams to `raw` from now: freed when it closes, watched for a client that stops reading. */
  const attach = (stream: OpenStream, raw: ServerResponse) => {
    stream.raw = raw;
    raw.once('close', () => free(stream));
    raw.on('drain', () => {
      stream.stuckSince = undefined;
    });
  };

  const watch = () => {
    if (timer) return;
    const run = () => {
      cutStuck();
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

  /** Every subscription's slot or refusal, by its request, until the route settles it. */
  const admitted = new WeakMap<FastifyRequest, OpenStream | AppError>();

  /** Synchronous from the count to the add: concurrent subscriptions cannot all pass the check. */
  const admitOwner = (owner: OpenStream['owner']): OpenStream | AppError => {
    if (owner && countOf(owner.accountId) >= MAX_STREAMS_PER_ACCOUNT) {
      return new AppError(
        'rate_limited',
        `An account may hold at most ${MAX_STREAMS_PER_ACCOUNT} open subscriptions and event streams; close one before opening another`,
      );
    }
    const stream: OpenStream = owner ? { owner } : {};
    open.add(stream);
    watch();
    return stream;
  };

  // A bad key never gets here: building the context refused it (401).
  const admit = ({ req, viewer }: GraphQLContext): OpenStream | AppError => {
    const authorization = req.headers.authorization;
    return admitOwner(viewer && authorization ? { accountId: viewer.accountId, authorization } : undefined);
  };

  return {
    plugin: {
      onSubscribe: ({ args, setResultAndStopExecution }: SubscribeEvent) => {
        const ctx = args.contextValue as GraphQLContext;
        const decision = admit(ctx);
        admitted.set(ctx.req, decision);
        if (decision instanceof AppError) {
          // Nothing is subscribed; the route answers the refusal instead of this result.
          setResultAndStopExecution({ errors: [toGraphqlError(decision)] });
          return;
        }
        return {
          onSubscribeResult: ({ result }: { result: unknown }) => {
            if (isAsyncIterable(result)) decision.events = result[Symbol.asyncIterator]();
          },
        };
      },
    },
    settle: (req, answer, raw) => {
      const decision = admitted.get(req);
      admitted.delete(req);
      if (decision === undefined) return undefined; // not a subscription
      if (decision instanceof AppError) return toErrorResponse(decision);
      const contentType = answer.headers.find(([name]) => name.toLowerCase() === 'content-type')?.[1];
      if (contentType?.startsWith('text/event-stream')) {
        if (!open.has(decision) || raw.destroyed) {
          // Cut before its answer (closeAll, a revoked key), or its client already left.
          drop(decision);
          raw.destroy();
          return undefined;
        }
        attach(decision, raw);
        return undefined;
      }
      drop(decision);
      return answer.status === 406 ? NOT_STREAMABLE : undefined;
    },
    abandon: (req) => {
      const decision = admitted.get(req);
      admitted.delete(req);
      if (decision !== undefined && !(decision instanceof AppError)) drop(decision);
    },
    hold: (owner, raw) => {
      // Its client left during admission: the close already happened and will not come again, so
      // a slot taken now would be counted for good. The caller finds `raw` destroyed and ends.
      if (raw.destroyed) return undefined;
      const decision = admitOwner(owner);
      if (decision instanceof AppError) return decision;
      attach(decision, raw);
      return undefined;
    },
    closeAll: () => {
      for (const stream of [...open]) cut(stream);
      stopWatching();
    },
  };
}
