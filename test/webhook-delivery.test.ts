import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createWebhookSender } from '../src/adapters/http/webhook-sender.js';
import {
  createWebhook,
  enableWebhook,
  replayWebhook,
  rotateWebhookSecret,
} from '../src/app/webhooks/manage-webhooks.js';
import { EVENT_TYPES } from '../src/domain/events/event-types.js';
import { startWebhookDispatcherLoop, WEBHOOK_USER_AGENT } from '../workers/webhook-dispatcher.loop.js';
import { loopbackOnlySockets } from './support/loopback-only-sockets.js';
import { emitEvents, likes } from './support/staged-events.js';
import { until } from './support/until.js';
import { openWebhookWorld } from './support/webhook-world.js';
import {
  signatureCount,
  startWebhookReceiver,
  verifiedWith,
  type WebhookReceiver,
} from './support/webhook-receiver.js';

/**
 * The webhook dispatcher against real Postgres and receivers on 127.0.0.1: events are staged and
 * numbered by the event sequencer, endpoints are managed through the same core the REST and
 * GraphQL routes call, and every delivery is verified as a receiver would, with plain node:crypto.
 *
 * Every TCP connection this process opens goes through a guard: one to anything but loopback
 * throws before a packet leaves (and is counted), so a refusal is proven without connecting.
 */

const connectAttempts = loopbackOnlySockets();

async function openWorld(overrides: Record<string, string> = {}) {
  const world = await openWebhookWorld({ handle: 'hook', env: overrides });
  const { env, dispatcher } = world;
  return {
    ...world,
    deps: {
      db: env.app.db,
      webhookUrlPolicy: env.app.webhookUrlPolicy,
      webhookSecrets: env.app.webhookSecrets,
    },
    /** `count` events staged for the account and numbered into its log, as a change and the sequencer do. */
    emit: async (accountId: string, count: number, type: string = 'post.liked', wake = true) => {
      await emitEvents(env.app.db, likes(accountId, count, type));
      if (wake) dispatcher.wake();
    },
    deliveries: (endpointId: string) =>
      env.app.db
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where('endpoint_id', '=', endpointId)
        .orderBy('id')
        .execute(),
  };
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, n) => from + n);

describe('webhook delivery', { concurrent: true }, () => {
  let world: Awaited<ReturnType<typeof openWorld>>;
  const receivers: WebhookReceiver[] = [];
  const receiver = async (...args: Parameters<typeof startWebhookReceiver>) => {
    const started = await startWebhookReceiver(...args);
    receivers.push(started);
    return started;
  };

  beforeAll(async () => {
    world = await openWorld();
  });
  afterAll(async () => {
    await world?.close(receivers);
  });

  test(
    'a receiver answering 503 for 30 s then gets the whole backlog, in order, signed',
    { timeout: 150_000 },
    async () => {
      const owner = await world.owner();
      const startedAt = Date.now();
      const hook = await receiver(() => (Date.now() - startedAt < 30_000 ? 503 : 200));
      const { endpoint, secret } = await createWebhook(world.deps, owner, { url: hook.url });
      await world.emit(owner.accountId, 10);
      await sleep(10_000);
      await world.emit(owner.accountId, 10); // more while the receiver is down
      await until(
        'the backlog',
        () => Promise.resolve(hook.delivered().length),
        (n) => n >= 20,
        120_000,
      );
      await sleep(500);

      expect(hook.delivered()).toEqual(range(1, 20));
      // Nothing after event 1 was sent while event 1 failed: attempts at ~0, 5, 20 and 50 s (the
      // schedule: 5 s, 15 s, 30 s), the last after the receiver came back.
      const failed = hook.requests.filter((request) => request.status === 503);
      expect(failed.map((request) => request.event.sequence)).toEqual([1, 1, 1]);
      const firstTries = hook.requests.filter((request) => request.event.sequence === 1).map((r) => r.at);
      expect(firstTries).toHaveLength(4);
      const gaps = firstTries.slice(1).map((at, n) => (at - firstTries[n]!) / 1000);
      expect(gaps[0]).toBeGreaterThanOrEqual(4.9);
      expect(gaps[0]).toBeLessThan(6.5);
      expect(gaps[1]).toBeGreaterThanOrEqual(14.9);
      expect(gaps[1]).toBeLessThan(16.5);
      expect(gaps[2]).toBeGreaterThanOrEqual(29.9);
      expect(gaps[2]).toBeLessThan(31.5);
      // The rest followed at once.
      expect(hook.requests.at(-1)!.at - firstTries[3]!).toBeLessThan(2_000);

      for (const request of hook.requests) {
        expect(verifiedWith(secret, request.headers['ledgerfeed-signature'], request.rawBody)).toBe(true);
        expect(signatureCount(request.headers['ledgerfeed-signature'])).toBe(1);
        expect(request.headers['ledgerfeed-event-id']).toBe(request.event.id);
        expect(request.headers['ledgerfeed-event-type']).toBe('post.liked');
        expect(request.headers['content-type']).toBe('application/json');
        expect(request.headers['user-agent']).toBe(WEBHOOK_USER_AGENT);
        expect(Object.keys(request.event)).toEqual(['id', 'type', 'created_at', 'sequence', 'data']);
      }
      expect(new Set(hook.requests.filter((r) => r.status === 200).map((r) => r.event.id)).size).toBe(20);

      const log = await world.deliveries(endpoint.id);
      expect(
        log.filter((row) => row.sequence === 1n).map((row) => [row.attempt, row.status_code, row.delivered]),
      ).toEqual([
        [1, 503, false],
        [2, 503, false],
        [3, 503, false],
        [4, 200, true],
      ]);
      expect(log.find((row) => !row.delivered)!.error).toBe('HTTP 503');
      expect(log.find((row) => !row.delivered)!.next_attempt_at).not.toBeNull();
      const state = await world.endpoint(endpoint.id);
      expect([state.delivered_through, state.attempt, state.failing_since, state.lease_owner]).toEqual([
        20n,
        0,
        null,
        null,
      ]);
    },
  );

  test('during a rotation each delivery carries two v1 entries and verifies with both secrets', async () => {
    const owner = await world.owner();
    const hook = await receiver();
    const { endpoint, secret: oldSecret } = await createWebhook(world.deps, owner, { url: hook.url });
    const { secret: newSecret } = await rotateWebhookSecret(world.deps, owner, endpoint.id);
    await world.emit(owner.accountId, 3);
    await until(
      '3 deliveries',
      () => Promise.resolve(hook.delivered().length),
      (n) => n >= 3,
      10_000,
    );
    for (const request of hook.requests) {
      const header = request.headers['ledgerfeed-signature'];
      expect(signatureCount(header)).toBe(2);
      expect(verifiedWith(newSecret, header, request.rawBody)).toBe(true);
      expect(verifiedWith(oldSecret, header, request.rawBody)).toBe(true);
      expect(verifiedWith('whsec_someone_else', header, request.rawBody)).toBe(false);
    }

    // The 24 h are over: the old secret no longer signs.
    await world.env.app.db
      .updateTable('webhook_endpoints')
      .set({ previous_secret_expires_at: new Date(Date.now() - 1_000) })
      .where('id', '=', endpoint.id)
      .execute();
    await world.emit(owner.accountId, 2);
    await until(
      '2 more deliveries',
      () => Promise.resolve(hook.delivered().length),
      (n) => n >= 5,
      10_000,
    );
    expect(hook.delivered()).toEqual(range(1, 5));
    for (const request of hook.requests.slice(3)) {
      const header = request.headers['ledgerfeed-signature'];
      expect(signatureCount(header)).toBe(1);
      expect(verifiedWith(newSecret, header, request.rawBody)).toBe(true);
      expect(verifiedWith(oldSecret, header, request.rawBody)).toBe(false);
    }
  });

  test('a private address is refused before connecting: a failed attempt logged with the reason', async () => {
    const owner = await world.owner();
    // Registration would refuse it: the row is written as if the address had changed since.
    const endpointId = randomUUID();
    const { id } = await world.env.app.db
      .insertInto('webhook_endpoints')
      .values({
        id: endpointId,
        account_id: owner.accountId,
        url: 'http://10.0.0.1/hooks',
        event_types: [...EVENT_TYPES],
        secret: world.env.app.webhookSecrets.seal('whsec_test', endpointId),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const before = Date.now();
    await world.emit(owner.accountId, 2);
    const [attempt] = await until(
      'the attempt',
      () => world.deliveries(id),
      (rows) => rows.length > 0,
      10_000,
    );
    expect(attempt).toMatchObject({ sequence: 1n, attempt: 1, delivered: false, status_code: null });
    expect(attempt!.error).toMatch(/^refused address: .*10\.0\.0\.1/);
    expect(attempt!.duration_ms).toBeLessThan(1_000);
    expect(connectAttempts.filter((host) => host === '10.0.0.1')).toEqual([]);
    const state = await world.endpoint(id);
    expect(state.attempt).toBe(1);
    expect(state.delivered_through).toBe(0n);
    expect(state.next_attempt_at!.getTime() - before).toBeGreaterThanOrEqual(4_000);
    expect(state.next_attempt_at!.getTime() - before).toBeLessThan(7_000);
  });

  test('a redirect is not followed: the 3xx is a failed attempt', async () => {
    const owner = await world.owner();
    const elsewhere = await receiver();
    const hook = await receiver(() => (response) => {
      response.writeHead(302, { location: elsewhere.url }).end();
    });
    const { endpoint } = await createWebhook(world.deps, owner, { url: hook.url });
    await world.emit(owner.accountId, 1);
    const [attempt] = await until(
      'the attempt',
      () => world.deliveries(endpoint.id),
      (rows) => rows.length > 0,
      10_000,
    );
    expect(attempt).toMatchObject({ status_code: 302, delivered: false });
    expect(attempt!.error).toContain('redirect');
    await sleep(500);
    expect(elsewhere.requests).toEqual([]);
    expect((await world.endpoint(endpoint.id)).delivered_through).toBe(0n);
  });

  test('a huge response is cut at 64 KiB and still counts by its status', async () => {
    const owner = await world.owner();
    let cut = 0;
    // 200, then a body that never ends: 16 KiB at a time, for as long as the client reads.
    const hook = await receiver(() => (response) => {
      response.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(16 * 1024, 120);
      const pump = () => {
        while (!response.destroyed && response.write(chunk));
      };
      response.on('drain', pump);
      response.on('close', () => cut++);
      pump();
    });
    const { endpoint } = await createWebhook(world.deps, owner, { url: hook.url });
    await world.emit(owner.accountId, 2);
    const log = await until(
      '2 deliveries',
      () => world.deliveries(endpoint.id),
      (rows) => rows.length >= 2,
      15_000,
    );
    expect(log.map((row) => [row.sequence, row.status_code, row.delivered])).toEqual([
      [1n, 200, true],
      [2n, 200, true],
    ]);
    expect(Math.max(...log.map((row) => row.duration_ms))).toBeLessThan(5_000);
    await until(
      'the connections cut',
      () => Promise.resolve(cut),
      (n) => n >= 2,
      5_000,
    );
  });

  test('an endpoint gets only the types it subscribes to, and its cursor passes the others', async () => {
    const owner = await world.owner();
    const hook = await receiver();
    const { endpoint } = await createWebhook(world.deps, owner, { url: hook.url, events: ['post.replied'] });
    await world.emit(owner.accountId, 3);
    await world.emit(owner.accountId, 1, 'post.replied');
    await world.emit(owner.accountId, 2);
    const state = await until(
      'the cursor past every event',
      () => world.endpoint(endpoint.id),
      (row) => row.delivered_through === 6n,
      10_000,
    );
    expect(hook.requests.map((request) => [request.event.sequence, request.event.type])).toEqual([
      [4, 'post.replied'],
    ]);
    expect(state.lease_owner).toBeNull();
  });

  test('events purged from under the cursor are passed over, not waited for', async () => {
    const owner = await world.owner();
    const hook = await receiver();
    const { endpoint } = await createWebhook(world.deps, owner, { url: hook.url });
    await world.env.app.db
      .updateTable('webhook_endpoints')
      .set({ status: 'disabled' })
      .where('id', '=', endpoint.id)
      .execute();
    await world.emit(owner.accountId, 3);
    await world.env.app.db.deleteFrom('account_events').where('account_id', '=', owner.accountId).execute();
    await enableWebhook(world.deps, owner, endpoint.id);
    world.dispatcher.wake();
    await until(
      'the cursor at the head',
      () => world.endpoint(endpoint.id),
      (row) => row.delivered_through === 3n,
      10_000,
    );
    await world.emit(owner.accountId, 1);
    await until(
      'the next event',
      () => Promise.resolve(hook.delivered()),
      (seen) => seen.length === 1,
      10_000,
    );
    expect(hook.delivered()).toEqual([4]);
  });

  test('the sender connects only to the address the check approved, keeping the hostname', async () => {
    const hook = await receiver();
    const port = new URL(hook.url).port;
    const looked: string[] = [];
    const sender = createWebhookSender({
      policy: { allowLoopback: true, requireHttps: false },
      userAgent: WEBHOOK_USER_AGENT,
      resolve: (hostname) => {
        looked.push(hostname);
        return Promise.resolve(hostname === 'inside.example' ? ['10.1.2.3'] : ['127.0.0.1']);
      },
    });
    const body = JSON.stringify({ id: 'evt_x', type: 'post.liked', created_at: '', sequence: 1, data: {} });
    try {
      const refused = await sender.send('e1', {
        url: `http://inside.example:${port}/hooks`,
        body,
        headers: {},
      });
      expect(refused).toMatchObject({ delivered: false, statusCode: null });
      // What the name resolved to is not told (issue 49): only the rule it broke.
      expect(refused.error).toMatch(/^refused address: .*private address/);
      expect(refused.error).not.toContain('10.1.2.3');
      expect(connectAttempts).not.toContain('inside.example');

      // `.test` never resolves in DNS: the request reaches the receiver only through the pinned address.
      const pinned = await sender.send('e2', {
        url: `http://receiver.test:${port}/hooks`,
        body,
        headers: {},
      });
      expect(pinned).toMatchObject({ delivered: true, statusCode: 200, error: null });
      expect(hook.requests.at(-1)!.headers.host).toBe(`receiver.test:${port}`);
      expect(connectAttempts).toContain('receiver.test'); // the guard saw it, and its pinned lookup
      expect(looked).toEqual(['inside.example', 'receiver.test']);
    } finally {
      sender.close();
    }

    const strict = createWebhookSender({
      policy: { allowLoopback: false, requireHttps: false },
      userAgent: 'x',
    });
    const loopback = await strict.send('e3', { url: hook.url, body, headers: {} });
    expect(loopback.error).toMatch(/^refused address/);
    expect(hook.requests).toHaveLength(1);
    strict.close();
  });
});

describe('webhook retry window; two dispatchers', () => {
  let world: Awaited<ReturnType<typeof openWorld>>;
  const receivers: WebhookReceiver[] = [];
  let hook: WebhookReceiver;

  beforeAll(async () => {
    world = await openWorld({ WEBHOOK_RETRY_WINDOW_MS: '3000' });
  });
  afterAll(async () => {
    await world?.close(receivers);
  });

  test('an endpoint failing past the window is disabled; enable and replay fill the gap in order', async () => {
    const owner = await world.owner();
    let healthy = true;
    hook = await startWebhookReceiver(() => (healthy ? 200 : 500));
    receivers.push(hook);
    const { endpoint, secret } = await createWebhook(world.deps, owner, { url: hook.url });
    await world.emit(owner.accountId, 2);
    await until(
      '2 deliveries',
      () => Promise.resolve(hook.delivered().length),
      (n) => n >= 2,
      10_000,
    );

    healthy = false;
    await world.emit(owner.accountId, 3);
    const disabled = await until(
      'disabled',
      () => world.endpoint(endpoint.id),
      (row) => row.status === 'disabled',
      15_000,
    );
    expect(disabled.disabled_reason).toMatch(/failed for \d+ s \(2 attempts since/);
    expect(disabled.delivered_through).toBe(2n);
    // First try, then one at the window's end (3 s, not the schedule's 5 s): both of event 3.
    const failures = hook.requests.filter((request) => request.status === 500);
    expect(failures.map((request) => request.event.sequence)).toEqual([3, 3]);
    expect((failures[1]!.at - failures[0]!.at) / 1000).toBeGreaterThanOrEqual(2.9);
    expect((failures[1]!.at - failures[0]!.at) / 1000).toBeLessThan(4);

    // Disabled: nothing is tried, whatever comes.
    healthy = true;
    await world.emit(owner.accountId, 2);
    await sleep(1_500);
    expect(hook.requests).toHaveLength(4);

    await enableWebhook(world.deps, owner, endpoint.id);
    world.dispatcher.wake();
    await until(
      'the backlog',
      () => Promise.resolve(hook.delivered().length),
      (n) => n >= 7,
      10_000,
    );
    expect(hook.delivered()).toEqual(range(1, 7));

    // The receiver lost what it had: replay from the start of the log.
    await replayWebhook(world.deps, owner, endpoint.id, '0');
    world.dispatcher.wake();
    await until(
      'the replay',
      () => Promise.resolve(hook.delivered().length),
      (n) => n >= 14,
      10_000,
    );
    expect(hook.delivered()).toEqual([...range(1, 7), ...range(1, 7)]);
    for (const request of hook.requests) {
      expect(verifiedWith(secret, request.headers['ledgerfeed-signature'], request.rawBody)).toBe(true);
    }
    expect((await world.endpoint(endpoint.id)).status).toBe('enabled');
  });

  test('two dispatchers (two worker processes) never deliver to one endpoint at once', async () => {
    // At most 3 endpoints at once: woken first, it takes 3 of the 6, and the first dispatcher the rest.
    const second = startWebhookDispatcherLoop(world.env.app, { maxActiveEndpoints: 3 });
    try {
      const endpoints = await Promise.all(
        range(1, 6).map(async () => {
          const owner = await world.owner();
          let inFlight = 0;
          let most = 0;
          const receiver = await startWebhookReceiver((request) => (response) => {
            most = Math.max(most, ++inFlight);
            setTimeout(() => {
              inFlight--;
              request.status = 200;
              response.writeHead(200).end();
            }, Math.random() * 3);
          });
          receivers.push(receiver);
          await createWebhook(world.deps, owner, { url: receiver.url });
          return { owner, receiver, most: () => most };
        }),
      );
      // Four rounds of 50 events each, each woken in turn first: the endpoints go back and forth
      // between the dispatchers.
      for (let round = 0; round < 4; round++) {
        for (const { owner } of endpoints) await world.emit(owner.accountId, 50, 'post.liked', false);
        const [early, late] = round % 2 === 0 ? [second, world.dispatcher] : [world.dispatcher, second];
        early.wake();
        await sleep(5);
        late.wake();
        await sleep(100);
      }
      for (const { receiver } of endpoints) {
        await until(
          'every event',
          () => Promise.resolve(receiver.delivered().length),
          (n) => n >= 200,
          30_000,
        );
      }
      await sleep(300);
      expect(second.counts().delivered).toBeGreaterThan(0);
      expect(world.dispatcher.counts().delivered).toBeGreaterThan(0);
      for (const { receiver, most } of endpoints) {
        expect(most()).toBe(1);
        expect(receiver.requests.map((request) => request.event.sequence)).toEqual(range(1, 200));
      }
    } finally {
      await second.stop();
    }
  });
});
