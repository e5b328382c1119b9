import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { sequenceStagedEvents } from '../src/adapters/postgres/event-log.repository.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { readSse, type SseReader } from './support/sse-reader.js';
import { until } from './support/until.js';

/*
 * The account event log as a client follows it: numbered densely per account, paged by cursor,
 * streamed over SSE and as a GraphQL subscription, both resuming from a cursor with nothing missed
 * or repeated.
 */

let h: ServiceHarness;
let alice: Member;
let bob: Member;

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
  alice = await h.member('evalice', 20_000_000n);
  bob = await h.member('evbob', 20_000_000n);
});
afterAll(async () => {
  await h?.close();
});

interface Page {
  events: Array<{ id: string; type: string; sequence: number; created_at: string; data: any }>;
  has_more: boolean;
  next_cursor: string;
}

async function page(who: Member, query = ''): Promise<Page> {
  const response = await h.call(who, 'GET', `/events${query}`);
  expect(response.status).toBe(200);
  return (await response.json()) as Page;
}

/** Every event of the account's log, paged `limit` at a time. */
async function wholeLog(who: Member, limit = 3): Promise<Page['events']> {
  const all: Page['events'] = [];
  let cursor = '0';
  for (;;) {
    const p = await page(who, `?after=${cursor}&limit=${limit}`);
    all.push(...p.events);
    cursor = p.next_cursor;
    if (!p.has_more) return all;
  }
}

async function post(who: Member, body: Record<string, string>): Promise<{ id: string; swap_tx: string }> {
  const response = await h.call(who, 'POST', '/posts', body);
  expect(response.status).toBe(201);
  return (await response.json()) as { id: string; swap_tx: string };
}

function openStream(who: Member, headers: Record<string, string> = {}, query = ''): Promise<SseReader> {
  const abort = new AbortController();
  return fetch(`${h.base}/api/v1/events/stream${query}`, {
    headers: { authorization: `Bearer ${who.key}`, ...headers },
    signal: abort.signal,
  }).then((response) => {
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    return readSse(response, abort);
  });
}

describe('the event log', () => {
  test('a post and a reply to it land in both accounts’ logs, numbered 1, 2, 3, ... per account', async () => {
    const original = await post(alice, { type: 'post', content: 'tell me' });
    const reply = await post(bob, { type: 'reply', content: 'told', parent_id: original.id });
    const aliceLog = await until(
      'alice told of the reply and both payments finalized',
      () => wholeLog(alice),
      (log) =>
        log.some((e) => e.type === 'post.replied') &&
        log.filter((e) => e.type === 'payment.finalized').length >= 2,
    );
    expect(aliceLog.map((e) => e.sequence)).toEqual(aliceLog.map((_, i) => i + 1));
    expect(new Set(aliceLog.map((e) => e.id)).size).toBe(aliceLog.length);
    for (const e of aliceLog) expect(e.id).toMatch(/^evt_[0-9a-f]{32}$/);

    const ownPost = aliceLog.find(
      (e) => e.type === 'payment.confirmed' && e.data.swap_tx === original.swap_tx,
    );
    expect(ownPost?.data).toMatchObject({ kind: 'post', amount_usd: -1, related_post_id: original.id });
    expect(typeof ownPost?.data.slot).toBe('number');
    const earning = aliceLog.find((e) => e.type === 'payment.confirmed' && e.data.swap_tx === reply.swap_tx);
    expect(earning?.data.kind).toBe('earn');
    expect(earning?.data.amount_usd).toBeGreaterThan(0);
    expect(aliceLog.find((e) => e.type === 'post.replied')?.data).toEqual({
      post_id: original.id,
      reply_id: reply.id,
      by: 'evbob',
    });
    // The finalization of each payment comes after its confirmation.
    for (const tx of [original.swap_tx, reply.swap_tx]) {
      const confirmed = aliceLog.find((e) => e.type === 'payment.confirmed' && e.data.swap_tx === tx)!;
      const finalized = aliceLog.find((e) => e.type === 'payment.finalized' && e.data.swap_tx === tx)!;
      expect(finalized.sequence).toBeGreaterThan(confirmed.sequence);
    }

    const bobLog = await until(
      'bob’s reply finalized',
      () => wholeLog(bob),
      (log) => log.some((e) => e.type === 'payment.finalized'),
    );
    expect(bobLog.map((e) => e.sequence)).toEqual(bobLog.map((_, i) => i + 1));
    expect(bobLog.find((e) => e.type === 'payment.confirmed')?.data).toMatchObject({
      kind: 'post',
      amount_usd: -1,
      related_post_id: reply.id,
    });
    expect(bobLog.some((e) => e.type === 'post.replied')).toBe(false);
  });

  test('a page after the end is empty and keeps the cursor; bad cursors and limits are JSON 400s', async () => {
    const end = await page(alice, '?after=999999');
    expect(end).toEqual({ events: [], has_more: false, next_cursor: '999999' });
    for (const query of ['?after=abc', '?after=-1', '?limit=0', '?limit=101', '?limit=x']) {
      const response = await h.call(alice, 'GET', `/events${query}`);
      expect(response.status, query).toBe(400);
      const body = (await response.json()) as { error: string; message: string };
      expect(body.error).toBe('invalid_request');
      expect(body.message).toMatch(/after|limit/);
    }
  });

  test('an engagement told at a first confirmation is told once, even if staged again', async () => {
    const db = h.env.app.db;
    const staged = { account_id: alice.account.id, type: 'post.liked', data: { post_id: 'x', by: 'y' } };
    await db
      .insertInto('event_staging')
      .values([
        { ...staged, dedupe_key: 'test:once' },
        { ...staged, dedupe_key: 'test:once' },
      ])
      .execute();
    await until(
      'the sequencer took the staged rows',
      () => db.selectFrom('event_staging').select('id').where('dedupe_key', '=', 'test:once').execute(),
      (rows) => rows.length === 0,
    );
    await db
      .insertInto('event_staging')
      .values({ ...staged, dedupe_key: 'test:once' })
      .execute();
    await sequenceStagedEvents(db, 100);
    const told = await db
      .selectFrom('account_events')
      .select('sequence')
      .where('dedupe_key', '=', 'test:once')
      .execute();
    expect(told).toHaveLength(1);
    const log = await wholeLog(alice, 100);
    expect(log.map((e) => e.sequence)).toEqual(log.map((_, i) => i + 1));
  });
});

test("a sequencer turn while another sequencer holds the lock numbers nothing; the holder's turn does", async () => {
  const db = h.env.app.db;
  const staged = { account_id: alice.account.id, type: 'post.liked', data: { post_id: 'x', by: 'z' } };
  await db.transaction().execute(async (holder) => {
    // Another sequencer's turn in progress: it holds the sequencer's lock until it commits.
    await sql`SELECT pg_advisory_xact_lock(${3_900_039n})`.execute(holder);
    await db
      .insertInto('event_staging')
      .values({ ...staged, dedupe_key: 'test:locked' })
      .execute();
    expect(await sequenceStagedEvents(db, 100)).toEqual({ moved: 0, accounts: [] });
    expect(await sequenceStagedEvents(db, 100, { lookFirst: false })).toEqual({ moved: 0, accounts: [] });
    const waiting = await db
      .selectFrom('event_staging')
      .select('id')
      .where('dedupe_key', '=', 'test:locked')
      .execute();
    expect(waiting).toHaveLength(1);
  });
  await until(
    'a sequencer took the staged row once the lock was free',
    () =>
      db.selectFrom('account_events').select('sequence').where('dedupe_key', '=', 'test:locked').execute(),
    (rows) => rows.length === 1,
  );
});

describe('following the log', () => {
  test('the SSE stream resumes after Last-Event-ID, then carries new events live', async () => {
    const before = await wholeLog(alice, 100);
    expect(before.length).toBeGreaterThan(2);
    const stream = await openStream(alice, { 'last-event-id': String(before.length - 2) });
    try {
      const first = await stream.next();
      expect(first.id).toBe(String(before.length - 1));
      expect(first.data).toEqual(before[before.length - 2]);
      expect((await stream.next()).data).toEqual(before.at(-1));
      const sent = await h.call(bob, 'POST', '/send', {
        to_handle: 'evalice',
        amount_usd: 0.25,
        memo: 'live',
      });
      expect(sent.status).toBe(201);
      const seen: string[] = [];
      for (;;) {
        const frame = await stream.next();
        expect(Number(frame.id)).toBe(before.length + seen.length + 1);
        expect(frame.event).toBe(frame.data.type);
        seen.push(frame.data.type);
        if (frame.data.type === 'send.received') {
          expect(frame.data.data).toMatchObject({ from: 'evbob', amount_usd: 0.25, memo: 'live' });
          break;
        }
      }
      expect(seen).toContain('payment.confirmed');
    } finally {
      stream.close();
    }
  });

  test('event streams count toward the 5 an account may hold, with its subscriptions', async () => {
    const streams = await Promise.all(Array.from({ length: 5 }, () => openStream(bob)));
    try {
      const sixth = await fetch(`${h.base}/api/v1/events/stream`, {
        headers: { authorization: `Bearer ${bob.key}` },
      });
      expect(sixth.status).toBe(429);
      expect(((await sixth.json()) as { error: string }).error).toBe('rate_limited');
    } finally {
      for (const stream of streams) stream.close();
    }
    // Closed streams free their slots.
    const again = await until(
      'a slot freed',
      () => fetch(`${h.base}/api/v1/events/stream`, { headers: { authorization: `Bearer ${bob.key}` } }),
      (response) => {
        if (response.status !== 200) void response.body?.cancel();
        return response.status === 200;
      },
      10_000,
    );
    await again.body?.cancel();
  });

  test('a bad Last-Event-ID is a JSON 400, before any stream opens', async () => {
    const response = await fetch(`${h.base}/api/v1/events/stream`, {
      headers: { authorization: `Bearer ${alice.key}`, 'last-event-id': 'yesterday' },
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toBe('invalid_request');
  });

  test('the GraphQL events query pages the same log, and the subscription resumes from `after`', async () => {
    const log = await wholeLog(alice, 100);
    const queried = await h.gql(
      alice,
      'query($after: String) { events(after: $after, first: 2) { events { id type sequence createdAt data } hasMore nextCursor } }',
      { after: '1' },
    );
    expect(queried.errors).toBeUndefined();
    const events = queried.data.events.events as Array<{ id: string; data: unknown }>;
    expect(events.map((e) => e.id)).toEqual(log.slice(1, 3).map((e) => e.id));
    expect(events[0]!.data).toEqual(log[1]!.data);
    expect(queried.data.events.nextCursor).toBe('3');

    const abort = new AbortController();
    const response = await fetch(`${h.base}/graphql`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${alice.key}`,
        'content-type': 'application/json',
        accept: 'text/event-stream',
      },
      body: JSON.stringify({
        query: 'subscription($after: String) { events(after: $after) { id sequence type } }',
        variables: { after: String(log.length - 1) },
      }),
      signal: abort.signal,
    });
    const stream = readSse(response, abort);
    try {
      const resumed = await stream.next();
      expect(resumed.data.data.events).toEqual({
        id: log.at(-1)!.id,
        sequence: log.length,
        type: log.at(-1)!.type,
      });
      await post(alice, { type: 'post', content: 'one more' });
      const live = await stream.next(20_000);
      expect(live.data.data.events.sequence).toBe(log.length + 1);
    } finally {
      stream.close();
    }
  });
});
