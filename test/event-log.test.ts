import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { followWallets } from '../src/app/indexer/wallet-follower.js';
import { commitPost } from '../src/app/write-path/create-post.js';
import { settlePayment } from '../src/app/write-path/settle-payment.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { drainOnChain, shortChangedPost } from './support/chain-tampering.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { reconcileUntilQuiet } from './support/reconcile-rounds.js';
import { until } from './support/until.js';

/*
 * The account event log (issue 39) against the real service: each event type reaches the account
 * it concerns with its documented data, through GET /api/v1/events; a payment failing on chain is
 * told as payment.failed and every other money move ends with payment.finalized; the log pages
 * without a gap or a repeat while paid posts keep coming.
 */

let h: ServiceHarness;

beforeAll(async () => {
  // Limits off: the paging test writes 20 posts a second from one account and reads without pause.
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
});
afterAll(async () => {
  await h?.close();
});

interface AccountEvent {
  id: string;
  type: string;
  created_at: string;
  sequence: number;
  data: Record<string, unknown>;
}

interface EventPage {
  events: AccountEvent[];
  has_more: boolean;
  next_cursor: string;
}

async function page(who: Member, query: string): Promise<EventPage> {
  const response = await h.call(who, 'GET', `/events${query}`);
  expect(response.status, await response.clone().text()).toBe(200);
  return (await response.json()) as EventPage;
}

/** The whole log of `who`, oldest first, read 100 at a time. */
async function eventsOf(who: Member): Promise<AccountEvent[]> {
  const all: AccountEvent[] = [];
  let after = '0';
  for (;;) {
    const { events, has_more: more, next_cursor: next } = await page(who, `?after=${after}&limit=100`);
    all.push(...events);
    if (!more) return all;
    after = next;
  }
}

/** Reads `who`'s log until `done` holds (the sequencer numbers staged events every 100 ms). */
const logUntil = (who: Member, what: string, done: (events: AccountEvent[]) => boolean, ms = 60_000) =>
  until(`${who.account.handle}: ${what}`, () => eventsOf(who), done, ms);

const ofType = (events: AccountEvent[], type: string) => events.filter((e) => e.type === type);
const paymentEvents = (events: AccountEvent[], swapTx: string, state: string) =>
  events.filter((e) => e.type === `payment.${state}` && e.data.swap_tx === swapTx);

async function paidPost(
  who: Member,
  body: Record<string, unknown>,
): Promise<{ id: string; swap_tx: string }> {
  const response = await h.call(who, 'POST', '/posts', body);
  expect(response.status).toBe(201);
  return (await response.json()) as { id: string; swap_tx: string };
}

interface HistoryEntry {
  type: string;
  amount_usd: number;
  swap_tx: string | null;
  related_post_id: string | null;
  counterparty: string | null;
}

async function historyOf(who: Member): Promise<HistoryEntry[]> {
  const response = await h.call(who, 'GET', '/me/transactions?limit=50');
  expect(response.status).toBe(200);
  return ((await response.json()) as { transactions: HistoryEntry[] }).transactions;
}

/**
 * Until the sequencer has taken every staged event (numbered it, or dropped it as told before):
 * what the log shows then is all it will show of what happened so far.
 */
const allSequenced = () =>
  until(
    'nothing left staged',
    async () =>
      (
        await h.env.app.db
          .selectFrom('event_staging')
          .select(h.env.app.db.fn.countAll<string>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    (n) => Number(n) === 0,
  );

/** ISO 8601 as the log writes `created_at`. */
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

async function financeMember(handle: string): Promise<Member> {
  const account = await createAccount(h.env.app, { handle, role: 'finance' });
  return { account, key: (await createApiKey(h.env.app.apiKeys, account.id)).key };
}

describe('what each account is told', () => {
  let alice: Member;
  let bob: Member;
  let post: { id: string; swap_tx: string };
  let reply: { id: string; swap_tx: string };
  let quote: { id: string; swap_tx: string };
  let repost: { id: string; swap_tx: string };
  let sent: { swap_tx: string };

  beforeAll(async () => {
    alice = await h.member('ev_alice', 10_000_000n);
    bob = await h.member('ev_bob', 10_000_000n);
    post = await paidPost(alice, { type: 'post', content: 'told to everyone concerned' });
    reply = await paidPost(bob, { type: 'reply', content: 'a paid reply', parent_id: post.id });
    quote = await paidPost(bob, { type: 'quote', content: 'a paid quote', quoted_post_id: post.id });
    const reposted = await h.call(bob, 'POST', `/posts/${post.id}/repost`);
    expect(reposted.status).toBe(201);
    repost = (await reposted.json()) as { id: string; swap_tx: string };
    const send = await h.call(alice, 'POST', '/send', {
      to_handle: 'ev_bob',
      amount_usd: 1.25,
      memo: 'lunch',
    });
    expect(send.status).toBe(201);
    sent = (await send.json()) as { swap_tx: string };
  }, 120_000);

  test('every event is exactly { id, type, created_at, sequence, data }, numbered 1, 2, 3, ... per account', async () => {
    const events = await logUntil(
      alice,
      'her post finalized',
      (e) => paymentEvents(e, post.swap_tx, 'finalized').length > 0,
    );
    for (const event of events) {
      expect(Object.keys(event).sort()).toEqual(['created_at', 'data', 'id', 'sequence', 'type']);
      expect(event.id).toMatch(/^evt_[0-9a-f]{32}$/);
      expect(event.created_at).toMatch(ISO);
    }
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
  }, 90_000);

  test("each money move is confirmed then finalized, with the history's kind, signed amount, post and counterparty", async () => {
    const swaps = [post, reply, quote, repost, sent].map((p) => p.swap_tx);
    const finalized = (n: number) => (events: AccountEvent[]) =>
      events.filter((e) => e.type === 'payment.finalized').length >= n;
    const logs = new Map([
      [alice, await logUntil(alice, '5 money moves finalized', finalized(5))],
      [bob, await logUntil(bob, '4 money moves finalized', finalized(4))],
    ]);
    for (const [who, events] of logs) {
      const moves = (await historyOf(who)).filter((t) => t.swap_tx !== null && swaps.includes(t.swap_tx));
      // Alice: her post, three earnings (reply, quote, repost), her send; Bob: his three payments, the receive.
      expect(moves, who.account.handle).toHaveLength(who === alice ? 5 : 4);
      for (const move of moves) {
        const expected = {
          swap_tx: move.swap_tx,
          kind: move.type,
          amount_usd: move.amount_usd,
          related_post_id: move.related_post_id,
          counterparty: move.counterparty,
          slot: expect.any(Number),
        };
        for (const state of ['confirmed', 'finalized']) {
          const told = paymentEvents(events, move.swap_tx!, state);
          expect(
            told.map((e) => e.data),
            `${who.account.handle} ${move.type} ${state}`,
          ).toEqual([expected]);
        }
        const [confirmed] = paymentEvents(events, move.swap_tx!, 'confirmed');
        const [finalized] = paymentEvents(events, move.swap_tx!, 'finalized');
        expect(confirmed!.sequence).toBeLessThan(finalized!.sequence);
      }
    }
    // The documented values themselves, beside the comparison with the history.
    const aliceLog = logs.get(alice)!;
    expect(paymentEvents(aliceLog, post.swap_tx, 'confirmed')[0]!.data).toMatchObject({
      kind: 'post',
      amount_usd: -1,
      related_post_id: post.id,
    });
    // The parent's author is told of the reply's payment too: her leg is the earning.
    expect(paymentEvents(aliceLog, reply.swap_tx, 'confirmed')[0]!.data).toMatchObject({
      kind: 'earn',
      amount_usd: expect.any(Number),
    });
    expect(paymentEvents(aliceLog, reply.swap_tx, 'confirmed')[0]!.data.amount_usd).toBeGreaterThan(0);
    expect(paymentEvents(aliceLog, sent.swap_tx, 'confirmed')[0]!.data).toMatchObject({
      kind: 'send',
      amount_usd: -1.25,
      counterparty: 'ev_bob',
    });
    expect(paymentEvents(logs.get(bob)!, sent.swap_tx, 'confirmed')[0]!.data).toMatchObject({
      kind: 'receive',
      amount_usd: 1.25,
      counterparty: 'ev_alice',
    });
  }, 90_000);

  test('engagement with a post is told to its author: post.replied, post.quoted, post.reposted, once each', async () => {
    const events = await logUntil(alice, 'engagement', (e) => ofType(e, 'post.reposted').length > 0);
    expect(ofType(events, 'post.replied').map((e) => e.data)).toEqual([
      { post_id: post.id, reply_id: reply.id, by: 'ev_bob' },
    ]);
    expect(ofType(events, 'post.quoted').map((e) => e.data)).toEqual([
      { post_id: post.id, quote_id: quote.id, by: 'ev_bob' },
    ]);
    expect(ofType(events, 'post.reposted').map((e) => e.data)).toEqual([
      { post_id: post.id, repost_id: repost.id, by: 'ev_bob' },
    ]);
    // Nobody is told of their own engagement.
    const bobs = await eventsOf(bob);
    expect(bobs.filter((e) => e.type.startsWith('post.'))).toEqual([]);
  });

  test('a send tells its recipient send.received: from, amount_usd, memo, swap_tx', async () => {
    const events = await logUntil(bob, 'send.received', (e) => ofType(e, 'send.received').length > 0);
    expect(ofType(events, 'send.received').map((e) => e.data)).toEqual([
      { from: 'ev_alice', amount_usd: 1.25, memo: 'lunch', swap_tx: sent.swap_tx },
    ]);
    expect(ofType(await eventsOf(alice), 'send.received')).toEqual([]);
  });

  test('a like is told to the author once (like, unlike, like again), never for an unlike or a like of one’s own post', async () => {
    for (const method of ['POST', 'DELETE', 'POST', 'POST']) {
      expect((await h.call(bob, method, `/posts/${post.id}/like`)).status).toBe(200);
    }
    expect((await h.call(alice, 'POST', `/posts/${post.id}/like`)).status).toBe(200);
    expect((await h.call(bob, 'POST', `/posts/${reply.id}/like`)).status).toBe(200);
    await logUntil(alice, 'post.liked', (e) => ofType(e, 'post.liked').length > 0);
    await allSequenced();
    expect(ofType(await eventsOf(alice), 'post.liked').map((e) => e.data)).toEqual([
      { post_id: post.id, by: 'ev_bob' },
    ]);
    expect(ofType(await eventsOf(bob), 'post.liked')).toEqual([]);
  });

  test('a follow is told to the followee once (follow, unfollow, follow again); the follower is told nothing', async () => {
    for (const method of ['POST', 'POST', 'DELETE', 'POST']) {
      expect((await h.call(bob, method, '/users/ev_alice/follow')).status).toBe(200);
    }
    await logUntil(alice, 'follow.created', (e) => ofType(e, 'follow.created').length > 0);
    await allSequenced();
    expect(ofType(await eventsOf(alice), 'follow.created').map((e) => e.data)).toEqual([{ by: 'ev_bob' }]);
    expect(ofType(await eventsOf(bob), 'follow.created')).toEqual([]);
  });
});

describe('failures and reconciliation exceptions', () => {
  test('a payment that fails on chain is told as payment.failed, never confirmed nor finalized; finance alone is told the exceptions, once each', async () => {
    const app = h.env.app;
    const finance = await financeMember('ev_finance');
    const auditor = await financeMember('ev_auditor');
    const dave = await h.member('ev_dave', 3_000_000n);
    const erin = await h.member('ev_erin', 3_000_000n);

    const doomed = await commitPost(app, dave.account.id, { type: 'post', content: 'doomed post' });
    // Dave's wallet is emptied behind the ledger's back: the post's transfer fails on chain, and
    // the drain itself is USDC leaving one of our wallets with no ledger movement (unexplained).
    const drain = await drainOnChain(app, h.platform, dave.account, 3_000_000n);
    // Sent without preflight, it lands with its error, as on a validator: a verdict to reconcile.
    const { wire } = await app.db
      .selectFrom('chain_transactions')
      .select('wire')
      .where('id', '=', doomed.chainTransactionId)
      .executeTakeFirstOrThrow();
    await app.rpc.sendTransaction(wire, { skipPreflight: true, preflightCommitment: 'confirmed' });
    expect(await settlePayment(app, doomed.chainTransactionId)).toBe('failed');
    // Erin's payment says $1 in the ledger and moves $0.60 on chain (a signing bug, say).
    const shortChanged = await shortChangedPost(app, h.platform, erin.account);
    const shortSignature = shortChanged.signature;

    const daves = await logUntil(dave, 'payment.failed', (e) => ofType(e, 'payment.failed').length > 0);
    expect(ofType(daves, 'payment.failed').map((e) => e.data)).toEqual([
      {
        swap_tx: doomed.swapTx,
        kind: 'post',
        amount_usd: -1,
        related_post_id: doomed.id,
        counterparty: null,
        slot: expect.toBeOneOf([expect.any(Number), null]),
      },
    ]);
    expect(daves.filter((e) => e.data.swap_tx === doomed.swapTx).map((e) => e.type)).toEqual([
      'payment.failed',
    ]);

    // The reconciler and the wallet follower, each twice: the second look re-checks what the first
    // judged (at finalized, once the chain has finalized both), and must not tell it again.
    await reconcileUntilQuiet(app, { finalizedRecheckMs: 600_000 });
    await followWallets(app);
    await until(
      'both tampered transactions finalized on chain',
      () => app.rpc.getSignatureStatuses([doomed.swapTx, shortSignature], { searchTransactionHistory: true }),
      (statuses) => statuses.every((s) => s?.confirmationStatus === 'finalized'),
    );
    await reconcileUntilQuiet(app, { finalizedRecheckMs: 0 });
    await followWallets(app);
    // The second round did look again: both rows were judged at finalized this time.
    const commitments = await app.db
      .selectFrom('chain_transactions')
      .select('reconciled_commitment')
      .where('id', 'in', [doomed.chainTransactionId, shortChanged.chainTransactionId])
      .execute();
    expect(commitments.map((row) => row.reconciled_commitment)).toEqual(['finalized', 'finalized']);

    const told = (events: AccountEvent[]) => ofType(events, 'reconciliation.exception');
    const expected = [
      {
        swap_tx: doomed.swapTx,
        verdict: 'failed_on_chain',
        // Reversed in the ledger, nothing moved on chain.
        ledger_amount_usd: 0,
        chain_amount_usd: 0,
        detail: 'failed on chain; the ledger movement was reversed',
      },
      {
        swap_tx: drain,
        verdict: 'unexplained',
        ledger_amount_usd: 0,
        chain_amount_usd: 3,
        detail: expect.stringContaining('USDC left @ev_dave'),
      },
      {
        swap_tx: shortSignature,
        verdict: 'amount_mismatch',
        ledger_amount_usd: 1,
        chain_amount_usd: 0.6,
        detail: expect.any(String),
      },
    ];
    for (const member of [finance, auditor]) {
      const events = await logUntil(member, '3 exceptions', (e) => told(e).length >= 3);
      await allSequenced();
      const again = told(await eventsOf(member));
      expect(again.length, JSON.stringify(again)).toBe(
        events.filter((e) => e.type === 'reconciliation.exception').length,
      );
      expect(again.map((e) => e.data)).toEqual(expect.arrayContaining(expected));
      // Once each: no (signature, verdict) twice.
      const keys = again.map((e) => `${String(e.data.swap_tx)}:${String(e.data.verdict)}`);
      expect(new Set(keys).size).toBe(keys.length);
    }
    for (const member of [dave, erin]) expect(told(await eventsOf(member))).toEqual([]);
  }, 120_000);
});

describe('paging while paid posts are written', () => {
  test('20 paid posts/s for 10 s, read with limits of 1 to 7 all along: sequence 1..n dense, each id once', async () => {
    const writer = await h.member('ev_pager', 250_000_000n);
    const fan = await h.member('ev_pager_fan', 0n);
    const POSTS = 200;
    const INTERVAL_MS = 50;

    const statuses: number[] = [];
    let writing = true;
    let writeSeconds = 0;
    const started = Date.now();
    const writes = (async () => {
      const inFlight: Array<Promise<void>> = [];
      for (let i = 0; i < POSTS; i++) {
        const due = started + i * INTERVAL_MS;
        if (due > Date.now()) await sleep(due - Date.now());
        inFlight.push(
          (async () => {
            const response = await h.call(writer, 'POST', '/posts', { type: 'post', content: `paged ${i}` });
            statuses.push(response.status);
            if (response.status !== 201) return;
            // A like of each post: staged by another path than the payment trigger, interleaved.
            const { id } = (await response.json()) as { id: string };
            statuses.push((await h.call(fan, 'POST', `/posts/${id}/like`)).status);
          })(),
        );
      }
      await Promise.all(inFlight);
      writing = false;
      writeSeconds = (Date.now() - started) / 1000;
    })();

    // Per post: payment.confirmed, payment.finalized, post.liked.
    const expectedTotal = POSTS * 3;
    const seen: AccountEvent[] = [];
    const ids = new Set<string>();
    let cursor = 0;
    let pages = 0;
    let pagesWhileWriting = 0;
    const deadline = Date.now() + 120_000;
    while (seen.length < expectedTotal) {
      if (Date.now() > deadline) throw new Error(`log stalled at ${seen.length} of ${expectedTotal} events`);
      const limit = 1 + (pages % 7);
      const {
        events,
        has_more: more,
        next_cursor: next,
      } = await page(writer, `?after=${cursor}&limit=${limit}`);
      pages++;
      if (writing) pagesWhileWriting++;
      expect(events.length).toBeLessThanOrEqual(limit);
      // Each page continues exactly where the last stopped: no gap, no repeat.
      expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => cursor + 1 + i));
      for (const event of events) {
        expect(ids.has(event.id), event.id).toBe(false);
        ids.add(event.id);
        seen.push(event);
      }
      if (more) expect(events).toHaveLength(limit);
      expect(next).toBe(String(events.at(-1)?.sequence ?? cursor));
      cursor = Number(next);
      if (events.length === 0) await sleep(25);
    }
    await writes;
    const seconds = (Date.now() - started) / 1000;

    expect(statuses.filter((s) => s !== 201 && s !== 200)).toEqual([]);
    expect(seen.map((e) => e.sequence)).toEqual(seen.map((_, i) => i + 1));
    const byType = (type: string) => seen.filter((e) => e.type === type).length;
    expect([byType('payment.confirmed'), byType('payment.finalized'), byType('post.liked')]).toEqual([
      POSTS,
      POSTS,
      POSTS,
    ]);
    // The reads overlapped the writes, not only followed them.
    expect(pagesWhileWriting).toBeGreaterThanOrEqual(10);
    // Nothing beyond: once nothing is left staged, a read of the whole log is the same log.
    await allSequenced();
    expect((await eventsOf(writer)).map((e) => e.id)).toEqual(seen.map((e) => e.id));
    console.log(
      `event log under writes: ${POSTS} posts + ${POSTS} likes, ${seen.length} events read in ${pages} pages ` +
        `(${pagesWhileWriting} while writing); writes answered in ${writeSeconds.toFixed(1)} s ` +
        `(${(POSTS / writeSeconds).toFixed(1)} posts/s), all read ${seconds.toFixed(1)} s after the first`,
    );
  }, 180_000);
});

describe('GET /api/v1/events cursors and limits', () => {
  test('`after` at or beyond the end answers an empty page, has_more false, the cursor given back', async () => {
    const quiet = await h.member('ev_quiet', 2_000_000n);
    expect(await page(quiet, '')).toEqual({ events: [], has_more: false, next_cursor: '0' });
    await paidPost(quiet, { type: 'post', content: 'one post' });
    const events = await logUntil(quiet, 'finalized', (e) => ofType(e, 'payment.finalized').length > 0);
    const last = events.at(-1)!.sequence;
    expect(await page(quiet, `?after=${last}`)).toEqual({
      events: [],
      has_more: false,
      next_cursor: String(last),
    });
    expect(await page(quiet, `?after=${last + 1000}&limit=5`)).toEqual({
      events: [],
      has_more: false,
      next_cursor: String(last + 1000),
    });
    const first = await page(quiet, '?limit=1');
    expect(first).toMatchObject({ has_more: true, next_cursor: '1' });
    expect(first.events.map((e) => e.sequence)).toEqual([1]);
  }, 90_000);

  test('a bad `after` or `limit` is a 400 JSON invalid_request naming it', async () => {
    const reader = await h.member('ev_reader', 0n);
    const cases: Array<[string, string]> = [
      ['after=abc', 'after'],
      ['after=-1', 'after'],
      ['after=1.5', 'after'],
      ['after=1e3', 'after'],
      ['after=%201', 'after'],
      ['after=9999999999999999999999', 'after'],
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=-1', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=2.5', 'limit'],
    ];
    for (const [query, name] of cases) {
      const response = await h.call(reader, 'GET', `/events?${query}`);
      expect(response.status, query).toBe(400);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      const body = (await response.json()) as { error: string; message: string };
      expect(body.error, query).toBe('invalid_request');
      expect(body.message, query).toMatch(new RegExp(name));
    }
  });
});

describe('every money move of this file', () => {
  test('ends in payment.finalized for every account with a leg, or payment.failed for a payment that failed', async () => {
    const db = h.env.app.db;
    await until(
      'every payment finalized or failed',
      () =>
        db
          .selectFrom('chain_transactions')
          .select(db.fn.countAll<string>().as('n'))
          .where('status', 'not in', ['finalized', 'failed'])
          .executeTakeFirstOrThrow(),
      (row) => Number(row.n) === 0,
    );
    // What each account with a leg in a payment must have been told, against what it was told:
    // failed: payment.failed alone; anything else: payment.confirmed and payment.finalized, once each.
    const wrong = () =>
      sql<{ account_id: string; signature: string; status: string; told: string[] | null }>`
        WITH owed AS (
          SELECT DISTINCT la.account_id, c.signature, c.status
            FROM chain_transactions c
            JOIN ledger_legs l ON l.movement_id = c.movement_id
            JOIN ledger_accounts la ON la.id = l.ledger_account_id AND la.account_id IS NOT NULL),
        told AS (
          SELECT account_id, data->>'swap_tx' AS signature, array_agg(type ORDER BY sequence) AS types
            FROM account_events WHERE type LIKE 'payment.%'
           GROUP BY 1, 2)
        SELECT o.account_id, o.signature, o.status, t.types AS told
          FROM owed o LEFT JOIN told t USING (account_id, signature)
         WHERE t.types IS DISTINCT FROM (CASE o.status
                 WHEN 'failed' THEN ARRAY['payment.failed']
                 ELSE ARRAY['payment.confirmed', 'payment.finalized'] END)`.execute(db);
    const owed = await sql<{ n: number }>`
      SELECT count(DISTINCT (la.account_id, c.signature))::int AS n
        FROM chain_transactions c
        JOIN ledger_legs l ON l.movement_id = c.movement_id
        JOIN ledger_accounts la ON la.id = l.ledger_account_id AND la.account_id IS NOT NULL`.execute(db);
    // This file's payments: the paging test's 200 posts and the others, for payer and payee.
    expect(owed.rows[0]!.n).toBeGreaterThan(200);
    const left = await until(
      'every money move told at its end',
      async () => (await wrong()).rows,
      (rows) => rows.length === 0,
      30_000,
    );
    expect(left).toEqual([]);
  }, 90_000);
});
