import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, test, vi } from 'vitest';
import { createRedis } from '../src/adapters/redis/index.js';
import { createLiveEvents, type LiveEvents } from '../src/adapters/redis/live-events.js';
import { createChangeSignals, type ChangeSignals } from '../src/app/change-signals.js';
import { notifyCommitted, type LiveNoticeDeps } from '../src/app/commit-notifier.js';
import {
  postCountsEvents,
  postCreatedEvents,
  type LiveSubscription,
  type PostEvent,
} from '../src/app/live-updates.js';

/**
 * The commit notifier (src/app/commit-notifier.ts) against real Redis: a notice tells this
 * process's read caches at once, other processes' through Redis, and GraphQL subscribers on the
 * topics they listen to, each exactly what its row of the table says; a live event that cannot be
 * published is logged and costs the write nothing.
 */
const prefix = `notifier-${randomUUID()}`;
let publisher: Redis;
/** Two "processes": this one writes, the other only listens. */
let here: { liveEvents: LiveEvents; changes: ChangeSignals };
let there: { liveEvents: LiveEvents; changes: ChangeSignals };
const logLines: string[] = [];
let deps: LiveNoticeDeps;

function openProcess() {
  const liveEvents = createLiveEvents({ url: inject('redisUrl'), prefix, publisher });
  const logger = pino({ level: 'warn' }, sink());
  return { liveEvents, changes: createChangeSignals(liveEvents, logger) };
}

function sink(): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString());
      done();
    },
  });
}

/** Every change key `changes` hears until stop(). */
function heardBy(changes: ChangeSignals) {
  const heard: string[][] = [];
  const stop = changes.onChange((keys) => heard.push([...keys]));
  return { heard, stop };
}

beforeAll(async () => {
  publisher = createRedis(inject('redisUrl'), 'client');
  here = openProcess();
  there = openProcess();
  deps = { changes: here.changes, liveEvents: here.liveEvents, logger: pino({ level: 'warn' }, sink()) };
  // The other process's change channel is subscribed once a change has gone through it.
  const probe = heardBy(there.changes);
  await vi.waitFor(
    () => {
      here.changes.changed('trending');
      if (probe.heard.length === 0) throw new Error('the other process heard no change yet');
    },
    { timeout: 5_000, interval: 50 },
  );
  // The last probes' message (changes gather for 10 ms) arrives before any test listens.
  await new Promise((resolve) => setTimeout(resolve, 200));
  probe.stop();
});
afterAll(async () => {
  for (const side of [here, there]) {
    await side?.changes.close();
    await side?.liveEvents.close();
  }
  publisher?.disconnect();
});

/** A subscription, ready (subscribed in Redis) before the test writes. */
async function subscribed(events: LiveSubscription<PostEvent>) {
  await events.ready;
  return events;
}

describe('notifyCommitted', () => {
  test('a post shown tells every process’s read caches exactly its keys, and no subscriber', async () => {
    const created = await subscribed(postCreatedEvents(here));
    const local = heardBy(here.changes);
    const remote = heardBy(there.changes);
    try {
      notifyCommitted(deps, { kind: 'post-shown', authorId: 'a1', referenceId: 'r1' });
      const keys = ['latest', 'account-counts:a1', 'timeline:a1', 'post:r1'];
      // Heard here before notifyCommitted returned: the write answers after its caches know.
      expect(local.heard).toEqual([keys]);
      await expect.poll(() => remote.heard, { timeout: 5_000 }).toEqual([keys]);

      // The first post-created event is the paid post's: the shown one published none.
      notifyCommitted(deps, { kind: 'post-paid', id: 'p1', referenceId: null });
      expect((await created.next()).value).toEqual({ postId: 'p1' });
    } finally {
      local.stop();
      remote.stop();
      await created.return();
    }
  });

  test('a post paid reaches postCreated and the referenced post’s postCountsChanged, and no cache', async () => {
    const created = await subscribed(postCreatedEvents(there));
    const counts = await subscribed(postCountsEvents(there, 'r2'));
    const local = heardBy(here.changes);
    try {
      notifyCommitted(deps, { kind: 'post-paid', id: 'p2', referenceId: 'r2' });
      expect((await created.next()).value).toEqual({ postId: 'p2' });
      expect((await counts.next()).value).toEqual({ postId: 'r2' });
      expect(local.heard).toEqual([]);
    } finally {
      local.stop();
      await created.return();
      await counts.return();
    }
  });

  test('a like tells the caches and the post’s counts subscribers at once; a repost paid the subscribers only', async () => {
    const counts = await subscribed(postCountsEvents(there, 'r3'));
    const local = heardBy(here.changes);
    try {
      notifyCommitted(deps, { kind: 'like-changed', postId: 'r3' });
      expect(local.heard).toEqual([['post:r3']]);
      expect((await counts.next()).value).toEqual({ postId: 'r3' });
      notifyCommitted(deps, { kind: 'repost-paid', postId: 'r3' });
      expect((await counts.next()).value).toEqual({ postId: 'r3' });
      expect(local.heard).toHaveLength(1);
    } finally {
      local.stop();
      await counts.return();
    }
  });

  test('a failed payment names what its post and repost showed, its own post, and not the latest page', () => {
    const local = heardBy(here.changes);
    try {
      notifyCommitted(deps, {
        kind: 'payment-failed',
        post: { id: 'p4', authorId: 'a4', referenceId: 'r4' },
        repost: { postId: 'q4', reposterId: 'b4' },
      });
      // A send or swap hides nothing: no message at all.
      notifyCommitted(deps, { kind: 'payment-failed', post: undefined, repost: undefined });
      expect(local.heard).toEqual([
        ['post:p4', 'account-counts:a4', 'timeline:a4', 'post:r4', 'post:q4', 'timeline:b4'],
      ]);
    } finally {
      local.stop();
    }
  });

  test('what holds only the change signals (the CLI, a payments thread) may send only cache notices', () => {
    const local = heardBy(here.changes);
    try {
      const cacheOnly = { changes: here.changes };
      notifyCommitted(cacheOnly, { kind: 'key-revoked' });
      notifyCommitted(cacheOnly, { kind: 'account-updated', accountId: 'a6', handle: 'newname' });
      // @ts-expect-error: a live notice needs the live events publisher and a logger.
      expect(() => notifyCommitted(cacheOnly, { kind: 'post-paid', id: 'p6', referenceId: null })).toThrow();
      expect(local.heard).toEqual([['identity'], ['account:a6', 'identity', 'handle:newname']]);
    } finally {
      local.stop();
    }
  });

  test('a live event that cannot be published is logged; the caches are still told and the call does not throw', async () => {
    const closed = createRedis(inject('redisUrl'), 'client');
    await closed.quit();
    const broken = createLiveEvents({ url: inject('redisUrl'), prefix, publisher: closed });
    const local = heardBy(here.changes);
    const logged = logLines.length;
    try {
      expect(
        notifyCommitted({ ...deps, liveEvents: broken }, { kind: 'like-changed', postId: 'r5' }),
      ).toBeUndefined();
      expect(local.heard).toEqual([['post:r5']]);
      await expect
        .poll(() => logLines.slice(logged).join(''), { timeout: 5_000 })
        .toContain('live update not published');
    } finally {
      local.stop();
      await broken.close();
    }
  });
});
