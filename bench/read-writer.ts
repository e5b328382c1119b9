/**
 * The writer of `bench/read-under-writes.ts`, in a child process of its own (as real clients would
 * be: its HTTP client costs the service's event loop nothing). It pays posts and likes posts
 * through the real API on a fixed schedule, an open loop: one post every 1/postsPerSecond s and one
 * like every 1/likesPerSecond s, whatever earlier requests are doing. It never lowers the rate: if
 * its own event loop falls behind the schedule, the requests go out late (catching up at once) and
 * the delay is reported as schedule lag, so a writer that could not keep up says so.
 *
 * Likes go to the newest posts (the 50 newest it knows of, its own new posts first), each from an
 * account that has not liked that post yet, so every like changes a count a reader may be shown.
 *
 * Driven over IPC by `startWriter` (the parent): init, then start/stop per measured phase; each
 * stop answers the phase's tally once every request of the phase has answered (or timed out).
 */
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { forkBenchChild } from './bench-child.js';
import { createLeanClient } from './lean-http-client.js';
import { percentile } from './stats.js';

export interface WriterInit {
  base: string;
  /** Keys of funded accounts: paid posts go round-robin over them. */
  posterKeys: string[];
  /** Keys of the accounts that like. */
  likerKeys: string[];
  /** The newest posts, newest first: the first like targets. */
  recentPostIds: string[];
}

export interface WriteRates {
  postsPerSecond: number;
  likesPerSecond: number;
}

export interface WriteKindResult {
  /** Requests the schedule called for between start and stop. */
  due: number;
  sent: number;
  /** Answered 2xx (a post: 201 executed or 202 pending; a like: 200). */
  ok: number;
  /**
   * Of `ok`, those answered in the steady part of the window (after its first `steadyAfterMs`,
   * before the stop): what the service served while the readers ran.
   */
  okInWindow: number;
  /** Of `ok`, posts answered 202 (payment still pending after WRITE_TIMEOUT_MS). */
  pending: number;
  /** Every other outcome (status and the start of the body, or the client error) and its count. */
  other: [string, number][];
  /** Latency of the answered requests; null when none answered. */
  p50Ms: number | null;
  p99Ms: number | null;
}

export interface WriteResult {
  rates: WriteRates;
  /** From start to stop: the window the rates apply to. */
  seconds: number;
  /** The steady part of the window (after its first steadyAfterMs), where okInWindow is counted. */
  steadySeconds: number;
  posts: WriteKindResult;
  likes: WriteKindResult;
  /** The worst delay of a request behind its schedule (the writer's own event loop). */
  lagMaxMs: number;
  /** Requests sent more than 100 ms late. */
  lateRequests: number;
  inFlightMax: number;
  /** From stop until the last request of the phase answered. */
  drainSeconds: number;
}

type ToChild =
  | { type: 'init'; init: WriterInit }
  | { type: 'start'; rates: WriteRates; steadyAfterMs: number }
  | { type: 'stop' };
type FromChild = { type: 'ready' } | { type: 'started' } | { type: 'result'; result: WriteResult };

/**
 * Kept-alive connections the writer opens at most (requests beyond them wait in the client, and
 * their wait counts in their latency). Unbounded, a writer offering 100 posts/s to a service that
 * answered in seconds opened 2,000+ sockets at once.
 */
const MAX_SOCKETS = 256;
/** Like targets: the newest posts the writer knows. */
const RECENT_POSTS = 50;
/** A request that has not answered by then counts as failed ('error ...'). */
const REQUEST_TIMEOUT_MS = 30_000;
const LATE_MS = 100;

// ---------------------------------------------------------------- the parent's handle

export interface Writer {
  /** Starts a phase; answers count as served from `steadyAfterMs` after the start on. */
  start: (rates: WriteRates, steadyAfterMs: number) => Promise<void>;
  /** Stops scheduling; resolves with the phase's tally when its last request answered. */
  stop: () => Promise<WriteResult>;
  close: () => Promise<void>;
  /** The child's process id: a bench subtracts its CPU from the machine's. */
  pid: number;
}

export async function startWriter(init: WriterInit): Promise<Writer> {
  const child = forkBenchChild<FromChild>(import.meta.url);
  const ask = <T extends FromChild['type']>(message: ToChild, answer: T) => child.ask(message, answer);
  await ask({ type: 'init', init }, 'ready');
  return {
    start: async (rates, steadyAfterMs) => {
      await ask({ type: 'start', rates, steadyAfterMs }, 'started');
    },
    stop: async () => (await ask({ type: 'stop' }, 'result')).result,
    close: child.close,
    pid: child.pid,
  };
}

// ---------------------------------------------------------------- the child

interface KindTally {
  sent: number;
  ok: number;
  /** When each 2xx answer came (performance.now()). */
  okAt: number[];
  pending: number;
  other: Map<string, number>;
  latenciesMs: number[];
}

const newKind = (): KindTally => ({
  sent: 0,
  ok: 0,
  okAt: [],
  pending: 0,
  other: new Map(),
  latenciesMs: [],
});

interface Answer {
  status: number;
  text: string;
}

interface Poster {
  post: (url: string, body: string, headers: Record<string, string>) => Promise<Answer>;
  /** Closes its idle connections (call once nothing is in flight). */
  close: () => void;
}

/**
 * POSTs of JSON bodies over the lean client (lean-http-client.ts: node:http cost this process
 * 0.5-0.8 ms of CPU per request, 0.2-0.3 cores at 300 likes/s + 100 posts/s, taken from the
 * service it loads), on kept-alive connections of their own. One per phase: a connection left idle
 * since the previous phase (a minute, at times) may be closed by the server just as it is reused,
 * and that POST fails through no fault of the phase's load.
 */
function createPoster(): Poster {
  const client = createLeanClient({ maxSockets: MAX_SOCKETS, timeoutMs: REQUEST_TIMEOUT_MS });
  return { post: (url, body, headers) => client.post(url, body, headers), close: () => client.close() };
}

function runChild(): void {
  let poster = createPoster();
  const post: Poster['post'] = (url, body, headers) => poster.post(url, body, headers);
  let init: WriterInit | undefined;
  /** Newest first; the writer's own new posts join at the front. */
  let recent: string[] = [];
  /** Per post, the index of its next liker in likerKeys. */
  const nextLiker = new Map<string, number>();
  let likeTurn = 0;
  let postCounter = 0;
  let phase:
    | {
        rates: WriteRates;
        startedAt: number;
        steadyAfterMs: number;
        stopped: boolean;
        timer?: NodeJS.Timeout;
        posts: KindTally;
        likes: KindTally;
        lagMaxMs: number;
        lateRequests: number;
        inFlight: Set<Promise<void>>;
        inFlightMax: number;
      }
    | undefined;

  const send = (message: FromChild) => process.send!(message);

  /** `outcome` is 'ok', 'pending' (a 2xx too) or what else happened. */
  const record = (tally: KindTally, started: number, outcome: string) => {
    tally.latenciesMs.push(performance.now() - started);
    if (outcome === 'ok' || outcome === 'pending') {
      tally.ok++;
      tally.okAt.push(performance.now());
      if (outcome === 'pending') tally.pending++;
    } else tally.other.set(outcome, (tally.other.get(outcome) ?? 0) + 1);
  };

  const failure = (error: unknown) => `error ${error instanceof Error ? error.message : String(error)}`;

  const pay = async (tally: KindTally) => {
    const started = performance.now();
    const key = init!.posterKeys[postCounter % init!.posterKeys.length]!;
    const content = `read-under-writes post #${process.pid}-${postCounter++}`;
    try {
      const answer = await post(`${init!.base}/api/v1/posts`, JSON.stringify({ type: 'post', content }), {
        authorization: `Bearer ${key}`,
      });
      const body = JSON.parse(answer.text) as { id?: string };
      if ((answer.status === 201 || answer.status === 202) && typeof body.id === 'string') {
        recent = [body.id, ...recent.slice(0, RECENT_POSTS - 1)];
        record(tally, started, answer.status === 201 ? 'ok' : 'pending');
      } else record(tally, started, `${answer.status} ${answer.text.slice(0, 120)}`);
    } catch (error) {
      record(tally, started, failure(error));
    }
  };

  /** The next (post, liker) pair nobody used yet, newest posts first in turn. */
  const pickLike = (): { postId: string; key: string } | undefined => {
    const likers = init!.likerKeys;
    for (let tried = 0; tried < recent.length; tried++) {
      const postId = recent[(likeTurn + tried) % recent.length]!;
      const index = nextLiker.get(postId) ?? 0;
      if (index < likers.length) {
        nextLiker.set(postId, index + 1);
        likeTurn = (likeTurn + tried + 1) % Math.max(1, recent.length);
        return { postId, key: likers[index]! };
      }
    }
    return undefined;
  };

  const like = async (tally: KindTally) => {
    const started = performance.now();
    const target = pickLike();
    if (!target) {
      record(tally, started, 'no (post, liker) pair left to like');
      return;
    }
    try {
      const answer = await post(`${init!.base}/api/v1/posts/${target.postId}/like`, '{}', {
        authorization: `Bearer ${target.key}`,
      });
      record(tally, started, answer.status === 200 ? 'ok' : `${answer.status} ${answer.text.slice(0, 120)}`);
    } catch (error) {
      record(tally, started, failure(error));
    }
  };

  const track = (current: NonNullable<typeof phase>, request: Promise<void>) => {
    current.inFlight.add(request);
    current.inFlightMax = Math.max(current.inFlightMax, current.inFlight.size);
    void request.finally(() => current.inFlight.delete(request));
  };

  /** Sends every request that is due, then sleeps until the next one is. */
  const tick = () => {
    const current = phase;
    if (!current || current.stopped) return;
    const now = performance.now();
    const { postsPerSecond, likesPerSecond } = current.rates;
    const due = (n: number, rate: number) => current.startedAt + (n * 1000) / rate;
    const fire = (n: number, rate: number) => {
      const lag = now - due(n, rate);
      current.lagMaxMs = Math.max(current.lagMaxMs, lag);
      if (lag > LATE_MS) current.lateRequests++;
    };
    while (postsPerSecond > 0 && due(current.posts.sent, postsPerSecond) <= now) {
      fire(current.posts.sent, postsPerSecond);
      current.posts.sent++;
      track(current, pay(current.posts));
    }
    while (likesPerSecond > 0 && due(current.likes.sent, likesPerSecond) <= now) {
      fire(current.likes.sent, likesPerSecond);
      current.likes.sent++;
      track(current, like(current.likes));
    }
    const next = Math.min(
      postsPerSecond > 0 ? due(current.posts.sent, postsPerSecond) : Infinity,
      likesPerSecond > 0 ? due(current.likes.sent, likesPerSecond) : Infinity,
    );
    if (next !== Infinity) current.timer = setTimeout(tick, Math.max(0, next - performance.now()));
  };

  const summary = (tally: KindTally, due: number, from: number, to: number): WriteKindResult => {
    const sorted = [...tally.latenciesMs].sort((a, b) => a - b);
    return {
      due,
      sent: tally.sent,
      ok: tally.ok,
      okInWindow: tally.okAt.filter((at) => at >= from && at <= to).length,
      pending: tally.pending,
      other: [...tally.other],
      p50Ms: sorted.length > 0 ? percentile(sorted, 50) : null,
      p99Ms: sorted.length > 0 ? percentile(sorted, 99) : null,
    };
  };

  process.on('message', (message: ToChild) => {
    if (message.type === 'init') {
      init = message.init;
      recent = message.init.recentPostIds.slice(0, RECENT_POSTS);
      send({ type: 'ready' });
    } else if (message.type === 'start') {
      // Fresh connections for the phase (the last phase's requests have all answered).
      poster.close();
      poster = createPoster();
      phase = {
        rates: message.rates,
        startedAt: performance.now(),
        steadyAfterMs: message.steadyAfterMs,
        stopped: false,
        posts: newKind(),
        likes: newKind(),
        lagMaxMs: 0,
        lateRequests: 0,
        inFlight: new Set(),
        inFlightMax: 0,
      };
      tick();
      send({ type: 'started' });
    } else {
      const current = phase;
      if (!current) throw new Error('stop without start');
      const stoppedAt = performance.now();
      // Whatever fell due up to now goes out now (late, if the timer had not fired yet: the lag
      // shows it), so every request scheduled inside the window is sent.
      clearTimeout(current.timer);
      tick();
      current.stopped = true;
      clearTimeout(current.timer);
      const seconds = (stoppedAt - current.startedAt) / 1000;
      const steadyFrom = Math.min(stoppedAt, current.startedAt + current.steadyAfterMs);
      // Due: every request whose scheduled time fell inside the window (the first is due at 0).
      const dueIn = (rate: number) => (rate > 0 ? Math.floor(seconds * rate) + 1 : 0);
      void Promise.all(current.inFlight).then(() => {
        phase = undefined;
        send({
          type: 'result',
          result: {
            rates: current.rates,
            seconds,
            steadySeconds: (stoppedAt - steadyFrom) / 1000,
            posts: summary(current.posts, dueIn(current.rates.postsPerSecond), steadyFrom, stoppedAt),
            likes: summary(current.likes, dueIn(current.rates.likesPerSecond), steadyFrom, stoppedAt),
            lagMaxMs: current.lagMaxMs,
            lateRequests: current.lateRequests,
            inFlightMax: current.inFlightMax,
            drainSeconds: (performance.now() - stoppedAt) / 1000,
          },
        });
      });
    }
  });
  process.on('disconnect', () => process.exit(0));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) runChild();
