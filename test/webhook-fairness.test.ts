import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildServer } from '../src/api/server.js';
import { DELIVERY_LOG_KEEP } from '../src/app/webhooks/deliver-webhooks.js';
import { createWebhook, MAX_REPLAY_EVENTS, replayWebhook } from '../src/app/webhooks/manage-webhooks.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import type { startWebhookDispatcherLoop } from '../workers/webhook-dispatcher.loop.js';
import { emitEvents, likes } from './support/staged-events.js';
import { until } from './support/until.js';
import { openWebhookWorld, type Owner } from './support/webhook-world.js';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.js';

/**
 * Issue 49 (items 2, 3, 11): one tenant cannot jam webhook delivery for the others, a deletion
 * mid-delivery does not make other tenants receive an event twice, and the backlog shows in the
 * metrics. Against real Postgres and receivers on 127.0.0.1, with the worker role's dispatcher.
 */

async function openWorld(dispatcherOptions: Parameters<typeof startWebhookDispatcherLoop>[1] = {}) {
  const world = await openWebhookWorld({ handle: 'fair', dispatcher: dispatcherOptions });
  const { env, dispatcher } = world;
  return {
    ...world,
    // What the REST routes and GraphQL resolvers pass the management core: the app itself.
    deps: env.app,
    /** `count` events staged for each account and numbered into their logs, as changes and the sequencer do. */
    emit: async (accountIds: readonly string[], count: number, wake = true) => {
      await emitEvents(env.app.db, likes(accountIds, count), { batch: 10_000 });
      if (wake) dispatcher.wake();
    },
    /** The endpoint's delivered_through, as a number (until() prints what it last read). */
    through: async (endpointId: string) =>
      Number(
        (
          await env.app.db
            .selectFrom('webhook_endpoints')
            .select('delivered_through')
            .where('id', '=', endpointId)
            .executeTakeFirstOrThrow()
        ).delivered_through,
      ),
    logRows: async (endpointId: string) =>
      (
        await sql<{
          n: number;
          oldest: string;
        }>`SELECT count(*)::int AS n, min(sequence)::text AS oldest FROM webhook_deliveries WHERE endpoint_id = ${endpointId}`.execute(
          env.app.db,
        )
      ).rows[0]!,
  };
}

/**
 * Receivers on 127.0.0.1, one path per endpoint, that answer `200` headers at once and then
 * trickle a body of `bodyBytes` bytes, one a second (as issue 49's attacker does). Counts the
 * requests each path got.
 */
async function startTricklingReceivers(bodyBytes: number) {
  const timers = new Set<NodeJS.Timeout>();
  const received = new Map<string, number>();
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      received.set(request.url ?? '', (received.get(request.url ?? '') ?? 0) + 1);
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.write('.');
      let sent = 1;
      const timer = setInterval(() => {
        if (response.destroyed || sent >= bodyBytes) {
          clearInterval(timer);
          timers.delete(timer);
          if (!response.destroyed) response.end();
          return;
        }
        response.write('.');
        sent++;
      }, 1_000);
      timers.add(timer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (n: number) => `http://127.0.0.1:${port}/slow/${n}`,
    total: () => [...received.values()].reduce((a, b) => a + b, 0),
    close: async () => {
      for (const timer of timers) clearInterval(timer);
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A promise and the function that resolves it. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.POSITIVE_INFINITY;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

describe('webhook fairness between tenants', () => {
  // The 256 slots against ~260 busy endpoints, scaled down: 32 slots against 50.
  const SLOTS = 32;
  const TRICKLING_ACCOUNTS = 10;
  const ENDPOINTS_PER_ACCOUNT = 5;
  const LOG_PER_ACCOUNT = 100;
  let world: Awaited<ReturnType<typeof openWorld>>;
  const receivers: Array<{ close(): Promise<void> }> = [];

  beforeAll(async () => {
    world = await openWorld({ maxActiveEndpoints: SLOTS });
  });
  afterAll(async () => {
    await world?.close(receivers);
  });

  test(
    "a victim's commit-to-2xx p99 stays under 1 s while 50 endpoints of other accounts trickle their bodies and replay their logs",
    { timeout: 120_000 },
    async () => {
      const slow = await startTricklingReceivers(30);
      receivers.push(slow);
      const tenants = await Promise.all(Array.from({ length: TRICKLING_ACCOUNTS }, () => world.owner()));
      // Their logs first, then their endpoints (which start at the head), then a replay of each.
      await world.emit(
        tenants.map((tenant) => tenant.accountId),
        LOG_PER_ACCOUNT,
        false,
      );
      const endpoints: Array<{ owner: Owner; id: string }> = [];
      for (const [a, owner] of tenants.entries()) {
        for (let n = 0; n < ENDPOINTS_PER_ACCOUNT; n++) {
          const { endpoint } = await createWebhook(world.deps, owner, {
            url: slow.url(a * ENDPOINTS_PER_ACCOUNT + n),
          });
          endpoints.push({ owner, id: endpoint.id });
        }
      }
      const victimOwner = await world.owner();
      const latencies: number[] = [];
      const victim = await startWebhookReceiver((request) => {
        latencies.push(Date.now() - Date.parse(request.event.created_at));
        return 200;
      });
      receivers.push(victim);
      await createWebhook(world.deps, victimOwner, { url: victim.url });

      const replayedAt = Date.now();
      for (const { owner, id } of endpoints) await replayWebhook(world.deps, owner, id, '0');
      world.dispatcher.wake();
      await sleep(1_000); // every slot the tenants can take is taken

      // The victim's account: an event every 250 ms for 12 s.
      const VICTIM_EVENTS = 48;
      for (let n = 0; n < VICTIM_EVENTS; n++) {
        await world.emit([victimOwner.accountId], 1);
        await sleep(250);
      }
      // What did not arrive within 5 s more counts as never (infinitely late).
      await until(
        'the victim',
        () => Promise.resolve(victim.delivered().length),
        (n) => n >= VICTIM_EVENTS,
        5_000,
      ).catch(() => undefined);
      const sorted = [...latencies].sort((a, b) => a - b);
      while (sorted.length < VICTIM_EVENTS) sorted.push(Number.POSITIVE_INFINITY);
      const p99 = percentile(sorted, 99);
      const seconds = (Date.now() - replayedAt) / 1000;
      const trickled = slow.total();
      console.log(
        `victim commit-to-2xx p50 ${percentile(sorted, 50)} ms, p99 ${p99} ms over ${VICTIM_EVENTS} events; ` +
          `the ${endpoints.length} trickling endpoints: ${trickled} requests in ${seconds.toFixed(1)} s ` +
          `(${(trickled / seconds).toFixed(1)}/s), with ${SLOTS} slots`,
      );
      expect(victim.delivered()).toEqual(Array.from({ length: VICTIM_EVENTS }, (_, n) => n + 1));
      expect(p99).toBeLessThan(1_000);
      // And the tenants were served, not starved: each of their slots turns over in about a second.
      expect(trickled).toBeGreaterThan(endpoints.length);
      // One account never holds more than its share of the slots.
      const leased = await sql<{ most: number }>`
        SELECT coalesce(max(n), 0)::int AS most FROM (
          SELECT count(*) AS n FROM webhook_endpoints
           WHERE lease_owner IS NOT NULL AND lease_expires_at > now() GROUP BY account_id) per_account`.execute(
        world.env.app.db,
      );
      expect(leased.rows[0]!.most).toBeLessThanOrEqual(2);
    },
  );
});

describe('webhook replay and delivery log bounds; deletion mid-delivery; metrics', () => {
  let world: Awaited<ReturnType<typeof openWorld>>;
  let server: FastifyInstance;
  let base: string;
  const receivers: Array<{ close(): Promise<void> }> = [];
  const receiver = async (...args: Parameters<typeof startWebhookReceiver>) => {
    const started = await startWebhookReceiver(...args);
    receivers.push(started);
    return started;
  };

  beforeAll(async () => {
    world = await openWorld();
    server = await buildServer(world.env.app, { queueBoard: false });
    base = await server.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await server?.close();
    await world?.close(receivers);
  });

  async function post(key: string, path: string, body: unknown) {
    const response = await fetch(`${base}/api/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as { error: string; message: string } };
  }

  test('a replay over the bound is refused naming the count; a second replay while one is in flight is refused', async () => {
    const owner = await world.owner();
    const { key } = await createApiKey(world.env.app.apiKeys, owner.accountId);
    await world.emit([owner.accountId], MAX_REPLAY_EVENTS + 5, false);
    let answering = 503;
    const hook = await receiver(() => answering);
    const { endpoint } = await createWebhook(world.deps, owner, { url: hook.url });

    const tooMany = await post(key, `/webhooks/${endpoint.id}/replay`, {});
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error).toBe('invalid_request');
    expect(tooMany.body.message).toContain(`would send ${MAX_REPLAY_EVENTS + 5} events`);
    expect(tooMany.body.message).toContain(String(MAX_REPLAY_EVENTS));
    expect((await world.endpoint(endpoint.id)).delivered_through).toBe(BigInt(MAX_REPLAY_EVENTS + 5));

    // Within the bound: accepted, and in flight while the receiver fails.
    const within = await post(key, `/webhooks/${endpoint.id}/replay`, { after: '10' });
    expect(within.status).toBe(202);
    world.dispatcher.wake();
    await until(
      'a failed attempt',
      () => Promise.resolve(hook.requests.length),
      (n) => n >= 1,
      10_000,
    );
    const again = await post(key, `/webhooks/${endpoint.id}/replay`, { after: '1000' });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('conflict');
    expect(again.body.message).toMatch(/replay of this endpoint is still being sent/);
    expect(again.body.message).toContain(`of ${MAX_REPLAY_EVENTS + 5}`);

    // Once it is done, the next replay is taken.
    answering = 200;
    await world.env.app.db
      .updateTable('webhook_endpoints')
      .set({ next_attempt_at: null })
      .where('id', '=', endpoint.id)
      .execute();
    world.dispatcher.wake();
    await until(
      'the replay sent',
      () => world.through(endpoint.id),
      (through) => through === MAX_REPLAY_EVENTS + 5,
      60_000,
    );
    expect((await post(key, `/webhooks/${endpoint.id}/replay`, { after: '1000' })).status).toBe(202);
  }, 90_000);

  test('the delivery log keeps at most its bound of rows per endpoint, the newest', async () => {
    const owner = await world.owner();
    const hook = await receiver();
    const { endpoint } = await createWebhook(world.deps, owner, { url: hook.url });
    const total = DELIVERY_LOG_KEEP + 150;
    await world.emit([owner.accountId], total);
    await until(
      'every event delivered',
      () => world.through(endpoint.id),
      (through) => through === total,
      90_000,
    );
    const log = await until(
      'the log pruned',
      () => world.logRows(endpoint.id),
      (rows) => rows.n <= DELIVERY_LOG_KEEP + 100,
      10_000,
    );
    expect(log.n).toBeGreaterThanOrEqual(DELIVERY_LOG_KEEP);
    expect(Number(log.oldest)).toBe(total - log.n + 1);
  }, 120_000);

  test("deleting an endpoint mid-delivery delivers every other endpoint's events exactly once", async () => {
    // Every receiver holds its answer until told; Y's record is then held up (its row locked) so
    // that the deleted endpoint's record and the others' leave together in the next statement.
    const held = new Map<string, http.ServerResponse>();
    const hold = async (name: string) =>
      receiver((request) => (response) => {
        request.status = 200;
        held.set(`${name}:${request.event.sequence}`, response);
      });
    const answer = (name: string, sequence: number) => {
      const response = held.get(`${name}:${sequence}`)!;
      response.writeHead(200).end('ok');
    };
    const names = ['y', 'x', 'o1', 'o2', 'o3', 'o4', 'o5'];
    const hooks = new Map<string, { receiver: WebhookReceiver; owner: Owner; id: string }>();
    for (const name of names) {
      const owner = await world.owner();
      const hook = await hold(name);
      const { endpoint } = await createWebhook(world.deps, owner, { url: hook.url });
      hooks.set(name, { receiver: hook, owner, id: endpoint.id });
    }
    const of = (name: string) => hooks.get(name)!;
    await world.emit(
      names.map((name) => of(name).owner.accountId),
      1,
    );
    await until(
      'every receiver holding event 1',
      () => Promise.resolve(held.size),
      (n) => n === names.length,
      10_000,
    );

    const releaseY = deferred();
    const commitDelete = deferred();
    const yLocked = deferred();
    const xDeleting = deferred();
    const lockingY = world.env.app.db.transaction().execute(async (trx) => {
      await sql`SELECT id FROM webhook_endpoints WHERE id = ${of('y').id} FOR NO KEY UPDATE`.execute(trx);
      yLocked.resolve();
      await releaseY.promise;
    });
    const deletingX = world.env.app.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('webhook_endpoints').where('id', '=', of('x').id).execute();
      xDeleting.resolve();
      await commitDelete.promise;
    });
    await Promise.all([yLocked.promise, xDeleting.promise]);

    answer('y', 1); // its record waits on Y's lock, holding the records' statement
    await sleep(300);
    for (const name of names.slice(1)) answer(name, 1); // these gather for the next statement
    await sleep(300);
    releaseY.resolve(); // the next statement: X's record beside the others', X being deleted
    await lockingY;
    await sleep(300);
    commitDelete.resolve();
    await deletingX;

    const others = names.filter((name) => name !== 'x');
    for (const name of others) {
      await until(
        `${name} delivered through 1`,
        () => world.through(of(name).id),
        (through) => through === 1,
        8_000,
      );
    }
    // The next event goes out at once, and event 1 never again.
    await world.emit(
      others.map((name) => of(name).owner.accountId),
      1,
    );
    await until(
      'event 2 at every other receiver',
      () => Promise.resolve(others.filter((name) => held.has(`${name}:2`)).length),
      (n) => n === others.length,
      8_000,
    );
    for (const name of others) answer(name, 2);
    for (const name of others) {
      await until(
        `${name} delivered through 2`,
        () => world.through(of(name).id),
        (through) => through === 2,
        8_000,
      );
    }
    for (const name of others) {
      expect(of(name).receiver.requests.map((request) => request.event.sequence)).toEqual([1, 2]);
      const log = await world.env.app.db
        .selectFrom('webhook_deliveries')
        .select(['sequence', 'delivered'])
        .where('endpoint_id', '=', of(name).id)
        .orderBy('id')
        .execute();
      expect(log).toEqual([
        { sequence: 1n, delivered: true },
        { sequence: 2n, delivered: true },
      ]);
    }
    expect(
      await world.env.app.db
        .selectFrom('webhook_endpoints')
        .select('id')
        .where('id', '=', of('x').id)
        .execute(),
    ).toEqual([]);
  }, 60_000);

  test('the webhook metrics show the endpoints by state, the attempts by outcome and the oldest undelivered event', async () => {
    const scrape = async () => {
      const response = await fetch(`${base}/metrics`);
      expect(response.status).toBe(200);
      return response.text();
    };
    const value = (text: string, series: string) => {
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return line === undefined ? undefined : Number(line.slice(series.length + 1));
    };
    const before = await scrape();
    for (const series of [
      'ledgerfeed_webhook_endpoints{state="enabled"}',
      'ledgerfeed_webhook_endpoints{state="disabled"}',
      'ledgerfeed_webhook_attempts_total{outcome="delivered"}',
      'ledgerfeed_webhook_attempts_total{outcome="failed"}',
      'ledgerfeed_webhook_attempts_total{outcome="timeout"}',
      'ledgerfeed_webhook_attempts_total{outcome="refused"}',
      'ledgerfeed_webhook_oldest_undelivered_seconds',
    ]) {
      expect(value(before, series), series).toBeTypeOf('number');
    }

    const owner = await world.owner();
    const failing = await receiver(() => 503);
    const { endpoint: failingEndpoint } = await createWebhook(world.deps, owner, { url: failing.url });
    const other = await world.owner();
    const { endpoint: disabled } = await createWebhook(world.deps, other, { url: failing.url });
    await world.env.app.db
      .updateTable('webhook_endpoints')
      .set({ status: 'disabled', disabled_reason: 'test' })
      .where('id', '=', disabled.id)
      .execute();
    await world.emit([owner.accountId], 1);
    await until(
      'a failed attempt',
      () => Promise.resolve(failing.requests.length),
      (n) => n >= 1,
      10_000,
    );
    await sleep(5_200); // past the scrape cache
    const after = await scrape();
    const moved = (series: string) => value(after, series)! - value(before, series)!;
    expect(moved('ledgerfeed_webhook_endpoints{state="enabled"}')).toBeGreaterThanOrEqual(1);
    expect(moved('ledgerfeed_webhook_endpoints{state="disabled"}')).toBeGreaterThanOrEqual(1);
    expect(moved('ledgerfeed_webhook_attempts_total{outcome="failed"}')).toBeGreaterThanOrEqual(1);
    expect(value(after, 'ledgerfeed_webhook_oldest_undelivered_seconds')).toBeGreaterThanOrEqual(5);
    expect((await world.endpoint(failingEndpoint.id)).delivered_through).toBe(0n);
  }, 60_000);
});
