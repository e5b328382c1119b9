import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { MAX_STREAMS_PER_ACCOUNT, STUCK_STREAM_MS } from '../src/api/graphql/live-streams.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { until } from './support/until.js';

/*
 * What a stream's client cannot make the server keep (issue 49): a connection reset while its
 * stream is being admitted leaves no slot counted and no follower reading the log (item 1), and a
 * client that never reads makes the server hold a bounded amount of memory, not the whole kept log,
 * and is cut once its answer has not moved for STUCK_STREAM_MS (item 4).
 */

let h: ServiceHarness;
let port: number;

beforeAll(async () => {
  // Rate limits on (a Redis round trip in every admission, the window a reset lands in), high
  // enough that this file's requests never meet them.
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '20' });
  port = Number(new URL(h.base).port);
});
afterAll(async () => {
  await h?.close();
});

/** `ledgerfeed_event_stream_followers` as /metrics reads now. */
async function followers(): Promise<number> {
  const response = await fetch(`${h.base}/metrics`);
  expect(response.status).toBe(200);
  const text = await response.text();
  return Number(/^ledgerfeed_event_stream_followers (\d+)$/m.exec(text)?.[1]);
}

const SUBSCRIPTION = JSON.stringify({ query: 'subscription { events { sequence data } }' });

/** The request head (and body) of an event stream: REST, or the GraphQL `events` subscription. */
function streamRequest(kind: 'rest' | 'graphql', key: string): string {
  if (kind === 'rest') {
    return (
      `GET /api/v1/events/stream HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
      `Authorization: Bearer ${key}\r\nAccept: text/event-stream\r\n\r\n`
    );
  }
  return (
    `POST /graphql HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${key}\r\n` +
    `Accept: text/event-stream\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(SUBSCRIPTION)}\r\n\r\n${SUBSCRIPTION}`
  );
}

/**
 * Sends a stream request and resets the connection (RST) as soon as the request left: the server
 * is then checking the key and spending the rate limit (a Redis round trip) when the reset lands.
 */
function resetDuringAdmission(kind: 'rest' | 'graphql', key: string): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(streamRequest(kind, key), () => socket.resetAndDestroy());
    });
    socket.on('error', () => {}); // the reset itself
    socket.on('close', () => resolve());
  });
}

/** A plain stream as `who`: its status, then closed. */
async function plainStreamStatus(who: Member): Promise<number> {
  const abort = new AbortController();
  const response = await fetch(`${h.base}/api/v1/events/stream`, {
    headers: { authorization: `Bearer ${who.key}` },
    signal: abort.signal,
  });
  abort.abort();
  return response.status;
}

/**
 * A stream whose client sends the request and never reads a byte of the answer. `closed` resolves
 * once the connection closed, which a client that reads nothing never sees: it is read only after
 * `socket.resume()`.
 */
function neverReading(kind: 'rest' | 'graphql', key: string): { socket: Socket; closed: Promise<void> } {
  const socket = connect(port, '127.0.0.1');
  socket.pause();
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.write(streamRequest(kind, key));
  return { socket, closed };
}

describe('event stream admission', () => {
  test(`20 REST streams and 20 GraphQL events subscriptions reset during their admission leave no follower running and no slot counted: ${MAX_STREAMS_PER_ACCOUNT} plain streams are then admitted`, async () => {
    const member = await h.member('reset_member', 0n);
    expect(await followers()).toBe(0);
    for (let round = 0; round < 20; round += 1) {
      await Promise.all([
        resetDuringAdmission('rest', member.key),
        resetDuringAdmission('graphql', member.key),
      ]);
    }
    // A follower ends within one poll of its stream's close; a leaked one never does.
    const settled = await until('no follower left', followers, (n) => n === 0, 8_000).catch(
      (error: unknown) => error,
    );
    // A stream reset in the last round can still hold its slot for a moment after the followers
    // are gone (its slot is released when its admission settles, not when its follower ends; seen
    // as one 429 in a CI run and in 1 of 2 runs here). So the plain streams are tried until all
    // are admitted or 8 s pass: a slot counted for good (the leak) is never freed and fails this.
    let tries = 0;
    const statuses = await until(
      `${MAX_STREAMS_PER_ACCOUNT} plain streams admitted`,
      async () => {
        tries += 1;
        const streams = await Promise.all(
          Array.from({ length: MAX_STREAMS_PER_ACCOUNT }, async () => {
            const abort = new AbortController();
            const response = await fetch(`${h.base}/api/v1/events/stream`, {
              headers: { authorization: `Bearer ${member.key}` },
              signal: abort.signal,
            });
            return { status: response.status, abort };
          }),
        );
        for (const stream of streams) stream.abort.abort();
        // Their slots are freed with their followers (both on the connection's close).
        await until('the plain streams’ followers ended', followers, (n) => n === 0, 8_000);
        return streams.map((s) => s.status);
      },
      (answered) => answered.every((status) => status === 200),
      8_000,
    );
    if (tries > 1) console.log(`the plain streams were all admitted at try ${tries}`);
    expect(statuses).toEqual(Array(MAX_STREAMS_PER_ACCOUNT).fill(200));
    expect(settled).toBe(0);
    expect(await plainStreamStatus(member)).toBe(200);
  }, 60_000);
});

/** Events in the kept log of the never-reading streams, and the size of each one's `data`. */
const LOGGED_EVENTS = 4_000;
const EVENT_BYTES = 8_000;
/**
 * What 5 never-reading streams of a LOGGED_EVENTS × EVENT_BYTES log (32 MB each, 160 MB in all)
 * may add to the server's resident memory: each holds at most what the kernel takes, one write
 * and the page of events (FOLLOW_BATCH) it is writing from.
 */
const RSS_BOUND_MB = 60;

describe('a stream whose client never reads', () => {
  test(
    `5 streams (REST and GraphQL) that never read a ${(LOGGED_EVENTS * EVENT_BYTES) / 1e6} MB log add less than ${RSS_BOUND_MB} MB to the server's RSS, and are cut once stuck ${STUCK_STREAM_MS / 1000} s`,
    async () => {
      const member = await h.member('stuck_member', 0n);
      // The log written directly (the sequencer would take minutes): one statement, TOASTed.
      await sql`
      INSERT INTO account_events (account_id, sequence, type, data, created_at)
      SELECT ${member.account.id}::uuid, g, 'post.liked',
             jsonb_build_object('post_id', 'p' || g, 'by', repeat(md5(g::text), ${EVENT_BYTES / 32})), now()
        FROM generate_series(1, ${LOGGED_EVENTS}) g`.execute(h.env.app.db);
      await sql`
      INSERT INTO account_event_heads (account_id, last_sequence) VALUES (${member.account.id}::uuid, ${LOGGED_EVENTS})
      ON CONFLICT (account_id) DO UPDATE SET last_sequence = excluded.last_sequence`.execute(h.env.app.db);
      global.gc?.();
      const before = process.memoryUsage().rss;
      const openedAt = performance.now();
      // 3 REST streams and 2 GraphQL `events` subscriptions (Fastify streams Yoga's answer with backpressure).
      const opened = (['rest', 'rest', 'rest', 'graphql', 'graphql'] as const).map((kind) =>
        neverReading(kind, member.key),
      );
      await until('5 followers running', followers, (n) => n === 5, 10_000);
      // Long enough for the old server to have queued the whole log of every stream.
      let peak = 0;
      for (let i = 0; i < 16; i += 1) {
        await sleep(500);
        peak = Math.max(peak, process.memoryUsage().rss);
      }
      const grewMb = (peak - before) / 1e6;
      console.log(
        `RSS before ${(before / 1e6).toFixed(1)} MB, peak ${(peak / 1e6).toFixed(1)} MB: +${grewMb.toFixed(1)} MB`,
      );
      expect(grewMb).toBeLessThan(RSS_BOUND_MB);
      // Stuck (nothing drained) since their first second: cut after STUCK_STREAM_MS and one check.
      await until('the stuck streams cut', followers, (n) => n === 0, STUCK_STREAM_MS + 10_000);
      const cutAfterMs = performance.now() - openedAt;
      console.log(`stuck streams cut after ${(cutAfterMs / 1000).toFixed(1)} s`);
      expect(cutAfterMs).toBeGreaterThan(STUCK_STREAM_MS);
      expect(cutAfterMs).toBeLessThan(STUCK_STREAM_MS + 8_000);
      // Their slots are free, and a client that reads at last finds its connection closed.
      expect(await plainStreamStatus(member)).toBe(200);
      for (const stream of opened) stream.socket.resume();
      await Promise.all(opened.map((stream) => stream.closed));
    },
    STUCK_STREAM_MS + 60_000,
  );
});
