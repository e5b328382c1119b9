import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildServer } from '../src/api/server.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import type { Scope } from '../src/domain/auth/api-key.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { EVENT_TYPES } from '../src/domain/events/event-types.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

/*
 * Webhook endpoint management over REST and GraphQL, against the API server on loopback with its
 * real Postgres and Redis. No worker role runs here: the dispatcher would move the endpoints'
 * delivery cursors while the tests read them; what the dispatcher writes (an account's log head,
 * a disabled endpoint, delivery attempts) is put in place with SQL where a test needs it.
 * Registration never connects to a URL, so the URLs point at a closed loopback port.
 */

let env: TestEnv;
let server: FastifyInstance;
let base: string;

beforeAll(async () => {
  env = await openTestEnv();
  server = await buildServer(env.app, { queueBoard: false });
  base = await server.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await server?.close();
  await env?.close();
});

interface Member {
  id: string;
  key: string;
}

let handles = 0;
async function member(scopes?: Scope[]): Promise<Member> {
  const account = await createAccount(env.app, { handle: `wh_${process.pid % 1000}_${handles++}` });
  const { key } = await createApiKey(env.app.apiKeys, account.id, scopes);
  return { id: account.id, key };
}

async function call(who: Member, method: string, path: string, body?: unknown, raw?: string) {
  const text = raw ?? (body === undefined ? undefined : JSON.stringify(body));
  const response = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${who.key}`,
      ...(text === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(text === undefined ? {} : { body: text }),
  });
  const answer = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    text: answer,
    body: answer === '' ? undefined : JSON.parse(answer),
  };
}

async function gql(who: Member, query: string, variables: Record<string, unknown> = {}) {
  const response = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${who.key}`,
      'content-type': 'application/json',
      accept: 'application/graphql-response+json',
    },
    body: JSON.stringify({ query, variables }),
  });
  return (await response.json()) as { data?: any; errors?: any[] };
}

const HOOK = 'http://127.0.0.1:9/hook';
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

async function create(who: Member, body: unknown = { url: HOOK }) {
  const answer = await call(who, 'POST', '/webhooks', body);
  expect(answer.status, answer.text).toBe(201);
  return answer.body as { id: string; url: string; events: string[]; secret: string; status: string };
}

/** Where the sequencer would have numbered the account's log up to. */
async function setHead(who: Member, lastSequence: bigint): Promise<void> {
  await env.app.db
    .insertInto('account_event_heads')
    .values({ account_id: who.id, last_sequence: lastSequence })
    .onConflict((oc) => oc.column('account_id').doUpdateSet({ last_sequence: lastSequence }))
    .execute();
}

function expectError(answer: { status: number; body: any }, status: number, error: string, message?: RegExp) {
  expect(answer.status, JSON.stringify(answer.body)).toBe(status);
  expect(Object.keys(answer.body).sort()).toEqual(['error', 'message']);
  expect(answer.body.error).toBe(error);
  if (message) expect(answer.body.message).toMatch(message);
}

describe('REST /api/v1/webhooks', () => {
  test('creating answers 201 with the secret, every event type by default, from the account’s current head', async () => {
    const owner = await member();
    await setHead(owner, 7n);
    const answer = await call(owner, 'POST', '/webhooks', { url: HOOK });
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      url: HOOK,
      events: [...EVENT_TYPES],
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/),
      status: 'enabled',
      created_at: expect.any(String),
    });
    expect(Date.now() - Date.parse(answer.body.created_at)).toBeLessThan(60_000);
    // The limit's own bucket, announced as every bucket is.
    expect(answer.headers.get('ratelimit-policy')).toBe('"webhooks";q=20;w=60');

    const list = await call(owner, 'GET', '/webhooks');
    expect(list.status).toBe(200);
    expect(list.body).toEqual({
      webhooks: [
        {
          id: answer.body.id,
          url: HOOK,
          events: [...EVENT_TYPES],
          status: 'enabled',
          disabled_reason: null,
          created_at: answer.body.created_at,
          delivered_through: '7',
          failing_since: null,
          next_attempt_at: null,
        },
      ],
    });
  });

  test('the secret is shown only at creation (and by rotate-secret), never listed or echoed', async () => {
    const owner = await member();
    const { id, secret } = await create(owner);
    const secretPart = secret.slice('whsec_'.length);
    for (const answer of [
      await call(owner, 'GET', '/webhooks'),
      await call(owner, 'POST', `/webhooks/${id}/enable`),
      await call(owner, 'POST', `/webhooks/${id}/replay`, {}),
      await call(owner, 'GET', `/webhooks/${id}/deliveries`),
    ]) {
      expect(answer.status).toBeLessThan(300);
      expect(answer.text).not.toContain(secretPart);
      expect(answer.text).not.toContain('whsec_');
    }
  });

  test('events: a subset in the catalogue’s order, duplicates dropped; unknown or empty is 400', async () => {
    const owner = await member();
    const created = await create(owner, {
      url: 'http://127.0.0.1:9/only-money',
      events: ['send.received', 'payment.failed', 'send.received'],
    });
    expect(created.events).toEqual(['payment.failed', 'send.received']);
    expectError(
      await call(owner, 'POST', '/webhooks', { url: HOOK, events: ['payment.lost'] }),
      400,
      'invalid_request',
      /events/,
    );
    expectError(
      await call(owner, 'POST', '/webhooks', { url: HOOK, events: [] }),
      400,
      'invalid_request',
      /events/,
    );
    expectError(
      await call(owner, 'POST', '/webhooks', { url: HOOK, events: 'payment.failed' }),
      400,
      'invalid_request',
    );
  });

  test('bad bodies are 400 JSON, never 500', async () => {
    const owner = await member();
    const bad: Array<[unknown, RegExp]> = [
      [{}, /url/],
      [{ url: 42 }, /url/],
      [{ url: '' }, /url/],
      [{ url: HOOK, extra: true }, /extra/],
      [[HOOK], /object/],
      [{ url: `http://127.0.0.1:9/${'x'.repeat(2_100)}` }, /url/],
    ];
    for (const [body, message] of bad) {
      expectError(await call(owner, 'POST', '/webhooks', body), 400, 'invalid_request', message);
    }
    expectError(await call(owner, 'POST', '/webhooks', undefined, '{"url":'), 400, 'invalid_request');
    expectError(await call(owner, 'POST', '/webhooks', undefined, 'null'), 400, 'invalid_request');
    expect((await call(owner, 'GET', '/webhooks')).body.webhooks).toEqual([]);
  });

  test('a refused URL is 400 with the reason, and nothing is registered', async () => {
    const owner = await member();
    const refused: Array<[string, RegExp]> = [
      ['http://10.0.0.5/hook', /url refused: 10\.0\.0\.5 is a private address/],
      ['http://169.254.169.254/latest/meta-data/', /link-local \(cloud metadata\)/],
      ['http://0xa9fea9fe/', /169\.254\.169\.254/],
      ['http://[fd00::1]/hook', /unique-local/],
      ['http://[::ffff:192.168.0.1]/hook', /IPv4-mapped 192\.168\.0\.1/],
      ['http://100.64.0.1/hook', /carrier-grade NAT/],
      ['ftp://127.0.0.1/hook', /scheme/],
      ['https://user:pass@127.0.0.1/hook', /credentials/],
      ['not a url', /not an absolute URL/],
    ];
    for (const [url, reason] of refused) {
      expectError(await call(owner, 'POST', '/webhooks', { url }), 400, 'invalid_request', reason);
    }
    expect((await call(owner, 'GET', '/webhooks')).body.webhooks).toEqual([]);
  });

  test('an account holds at most 5 endpoints: the 6th is 409, even when they are created at once', async () => {
    const owner = await member();
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, n) => call(owner, 'POST', '/webhooks', { url: `${HOOK}/${n}` })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 201, 201, 201, 409, 409, 409]);
    expectError(
      answers.find((a) => a.status === 409)!,
      409,
      'conflict',
      /at most 5 webhook endpoints/,
    );
    expect((await call(owner, 'GET', '/webhooks')).body.webhooks).toHaveLength(5);

    const first = answers.find((a) => a.status === 201)!.body.id as string;
    expect((await call(owner, 'DELETE', `/webhooks/${first}`)).status).toBe(204);
    await create(owner, { url: `${HOOK}/again` });
    expectError(await call(owner, 'POST', '/webhooks', { url: `${HOOK}/more` }), 409, 'conflict');
  });

  test('delete answers 204 once, then 404', async () => {
    const owner = await member();
    const { id } = await create(owner);
    const deleted = await call(owner, 'DELETE', `/webhooks/${id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expectError(await call(owner, 'DELETE', `/webhooks/${id}`), 404, 'not_found');
    expect((await call(owner, 'GET', '/webhooks')).body.webhooks).toEqual([]);
  });

  test('rotate-secret answers a new secret; the old one signs beside it for 24 h', async () => {
    const owner = await member();
    const { id, secret } = await create(owner);
    const answer = await call(owner, 'POST', `/webhooks/${id}/rotate-secret`);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      id,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/),
      previous_secret_expires_at: expect.any(String),
    });
    expect(answer.body.secret).not.toBe(secret);
    const expiresInMs = Date.parse(answer.body.previous_secret_expires_at) - Date.now();
    expect(expiresInMs).toBeGreaterThan(24 * 3_600_000 - 60_000);
    expect(expiresInMs).toBeLessThanOrEqual(24 * 3_600_000);
    const row = await env.app.db
      .selectFrom('webhook_endpoints')
      .select(['secret', 'previous_secret'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    // Both sealed (issue 49), each opening to the secret its owner was shown.
    expect(row.secret).toMatch(/^whseal1\./);
    expect(row.previous_secret).toMatch(/^whseal1\./);
    expect(env.app.webhookSecrets.open(row.secret, id)).toBe(answer.body.secret);
    expect(env.app.webhookSecrets.open(row.previous_secret!, id)).toBe(secret);
  });

  test('enable turns a disabled endpoint on with a fresh attempt state; the cursor stays', async () => {
    const owner = await member();
    await setHead(owner, 12n);
    const { id } = await create(owner);
    // What the dispatcher leaves when an event failed for the whole retry window.
    await env.app.db
      .updateTable('webhook_endpoints')
      .set({
        status: 'disabled',
        disabled_reason: 'event 13 failed for 3 days',
        delivered_through: 12n,
        attempt: 40,
        failing_since: new Date(Date.now() - 3 * 86_400_000),
        next_attempt_at: new Date(Date.now() + 3_600_000),
      })
      .where('id', '=', id)
      .execute();
    const listed = (await call(owner, 'GET', '/webhooks')).body.webhooks[0];
    expect(listed).toMatchObject({ status: 'disabled', disabled_reason: 'event 13 failed for 3 days' });
    expect(listed.failing_since).not.toBeNull();

    const answer = await call(owner, 'POST', `/webhooks/${id}/enable`);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      id,
      status: 'enabled',
      disabled_reason: null,
      delivered_through: '12',
      failing_since: null,
      next_attempt_at: null,
    });
    const row = await env.app.db
      .selectFrom('webhook_endpoints')
      .select(['attempt'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row.attempt).toBe(0);
  });

  test('replay moves the cursor back (none: to the start), keeps the status, refuses a cursor past the log', async () => {
    const owner = await member();
    await setHead(owner, 9n);
    const { id } = await create(owner);
    await env.app.db
      .updateTable('webhook_endpoints')
      .set({ status: 'disabled', disabled_reason: 'gave up', attempt: 7, failing_since: new Date() })
      .where('id', '=', id)
      .execute();

    const fromStart = await call(owner, 'POST', `/webhooks/${id}/replay`);
    expect(fromStart.status).toBe(202);
    expect(fromStart.body).toEqual({ id, replay_from: '0' });
    const listed = (await call(owner, 'GET', '/webhooks')).body.webhooks[0];
    expect(listed).toMatchObject({ status: 'disabled', delivered_through: '0', failing_since: null });

    expect((await call(owner, 'POST', `/webhooks/${id}/replay`, { after: '4' })).body).toEqual({
      id,
      replay_from: '4',
    });
    expect((await call(owner, 'POST', `/webhooks/${id}/replay`, { after: 9 })).body).toEqual({
      id,
      replay_from: '9',
    });
    expect((await call(owner, 'POST', `/webhooks/${id}/replay`, {})).body).toEqual({ id, replay_from: '0' });
    expectError(
      await call(owner, 'POST', `/webhooks/${id}/replay`, { after: '10' }),
      400,
      'invalid_request',
      /past/,
    );
    for (const after of ['abc', '-1', '1.5', -1, 1.5, true]) {
      expectError(
        await call(owner, 'POST', `/webhooks/${id}/replay`, { after }),
        400,
        'invalid_request',
        /after/,
      );
    }
    expectError(await call(owner, 'POST', `/webhooks/${id}/replay`, { from: '1' }), 400, 'invalid_request');
    const row = await env.app.db
      .selectFrom('webhook_endpoints')
      .select(['attempt', 'status', 'delivered_through'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ attempt: 0, status: 'disabled', delivered_through: 0n });
  });

  test('deliveries: the attempts newest first, paged by cursor', async () => {
    const owner = await member();
    const { id } = await create(owner);
    // Five attempts as the dispatcher records them: event 1 failed twice, then 1..3 delivered.
    const attempts = [
      { sequence: 1n, attempt: 1, status_code: 503, error: null, delivered: false, next: true },
      {
        sequence: 1n,
        attempt: 2,
        status_code: null,
        error: 'connection refused',
        delivered: false,
        next: true,
      },
      { sequence: 1n, attempt: 3, status_code: 200, error: null, delivered: true, next: false },
      { sequence: 2n, attempt: 1, status_code: 204, error: null, delivered: true, next: false },
      { sequence: 3n, attempt: 1, status_code: 200, error: null, delivered: true, next: false },
    ];
    for (const a of attempts) {
      await env.app.db
        .insertInto('webhook_deliveries')
        .values({
          endpoint_id: id,
          event_id: `evt_${String(a.sequence).padStart(32, '0')}`,
          sequence: a.sequence,
          attempt: a.attempt,
          status_code: a.status_code,
          error: a.error,
          duration_ms: 12,
          delivered: a.delivered,
          next_attempt_at: a.next ? new Date(Date.now() + 5_000) : null,
        })
        .execute();
    }
    const first = await call(owner, 'GET', `/webhooks/${id}/deliveries?limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.has_more).toBe(true);
    expect(first.body.deliveries).toEqual([
      {
        event_id: `evt_${'3'.padStart(32, '0')}`,
        sequence: '3',
        attempt: 1,
        status_code: 200,
        error: null,
        duration_ms: 12,
        delivered: true,
        next_attempt_at: null,
        created_at: expect.any(String),
      },
      expect.objectContaining({ sequence: '2', status_code: 204 }),
    ]);
    const second = await call(
      owner,
      'GET',
      `/webhooks/${id}/deliveries?limit=2&cursor=${first.body.next_cursor}`,
    );
    expect(
      (second.body.deliveries as Array<{ sequence: string; attempt: number }>).map((d) => [
        d.sequence,
        d.attempt,
      ]),
    ).toEqual([
      ['1', 3],
      ['1', 2],
    ]);
    expect(second.body.deliveries[1]).toMatchObject({ status_code: null, error: 'connection refused' });
    const third = await call(
      owner,
      'GET',
      `/webhooks/${id}/deliveries?limit=2&cursor=${second.body.next_cursor}`,
    );
    expect(third.body).toMatchObject({ has_more: false, next_cursor: null });
    expect(third.body.deliveries).toEqual([
      expect.objectContaining({ sequence: '1', attempt: 1, status_code: 503 }),
    ]);
    expect(third.body.deliveries[0].next_attempt_at).not.toBeNull();

    const all = await call(owner, 'GET', `/webhooks/${id}/deliveries`);
    expect(all.body).toMatchObject({ has_more: false, next_cursor: null });
    expect(all.body.deliveries).toHaveLength(5);
    for (const query of ['limit=0', 'limit=101', 'limit=x', 'cursor=abc', 'cursor=-1']) {
      expectError(await call(owner, 'GET', `/webhooks/${id}/deliveries?${query}`), 400, 'invalid_request');
    }
  });

  test('an unknown id, a malformed one or another account’s endpoint is 404 on every route', async () => {
    const owner = await member();
    const stranger = await member();
    const { id } = await create(owner);
    for (const target of [UNKNOWN_ID, 'not-a-uuid', '%00', id]) {
      for (const [method, path, body] of [
        ['DELETE', `/webhooks/${target}`],
        ['POST', `/webhooks/${target}/rotate-secret`],
        ['POST', `/webhooks/${target}/enable`],
        ['POST', `/webhooks/${target}/replay`, {}],
        ['GET', `/webhooks/${target}/deliveries`],
      ] as const) {
        expectError(await call(stranger, method, path, body), 404, 'not_found');
      }
    }
    // The stranger's attempts changed nothing.
    expect((await call(owner, 'GET', '/webhooks')).body.webhooks).toEqual([
      expect.objectContaining({ id, status: 'enabled' }),
    ]);
  });

  test('a key missing any scope is refused 403 on every route', async () => {
    const owner = await member();
    const { id } = await create(owner);
    for (const scopes of [['read', 'post', 'engage'], ['post', 'engage', 'send'], ['read']] as Scope[][]) {
      const lesser = { ...owner, key: (await createLesserKey(owner, scopes)).key };
      for (const [method, path, body] of [
        ['POST', '/webhooks', { url: HOOK }],
        ['GET', '/webhooks'],
        ['DELETE', `/webhooks/${id}`],
        ['POST', `/webhooks/${id}/rotate-secret`],
        ['POST', `/webhooks/${id}/enable`],
        ['POST', `/webhooks/${id}/replay`, {}],
        ['GET', `/webhooks/${id}/deliveries`],
      ] as const) {
        expectError(await call(lesser, method, path, body), 403, 'forbidden', /scope/);
      }
      await env.app.apiKeys.revoke(
        lesser.key.slice('lf_live_'.length, 'lf_live_'.length + 8),
        owner.id,
        new Date(),
      );
    }
    expect((await call(owner, 'GET', '/webhooks')).body.webhooks).toHaveLength(1);
  });

  test('without a key it is 401', async () => {
    const response = await fetch(`${base}/api/v1/webhooks`);
    expect(response.status).toBe(401);
  });
});

/** A second key of the owner's account with fewer scopes (an account holds 2 keys at most). */
function createLesserKey(owner: Member, scopes: Scope[]) {
  return createApiKey(env.app.apiKeys, owner.id, scopes);
}

describe('GraphQL webhook fields', () => {
  const fields = 'id url events status disabledReason deliveredThrough failingSince nextAttemptAt createdAt';

  test('create (the secret once), list, rotate, enable, replay, deliveries and delete', async () => {
    const owner = await member();
    await setHead(owner, 3n);
    const created = await gql(
      owner,
      `mutation($url: String!, $events: [String!]) { createWebhook(url: $url, events: $events) { secret webhook { ${fields} } } }`,
      { url: HOOK, events: ['post.liked', 'payment.confirmed'] },
    );
    expect(created.errors).toBeUndefined();
    const { secret, webhook } = created.data.createWebhook;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(webhook).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      url: HOOK,
      events: ['payment.confirmed', 'post.liked'],
      status: 'ENABLED',
      disabledReason: null,
      deliveredThrough: '3',
      failingSince: null,
      nextAttemptAt: null,
      createdAt: expect.any(String),
    });

    const listed = await gql(owner, `{ webhooks { ${fields} } }`);
    expect(listed.data.webhooks).toEqual([webhook]);
    // The listed type has no secret at all.
    const asked = await gql(owner, '{ webhooks { id secret } }');
    expect(asked.errors?.[0]?.message).toMatch(/Cannot query field "secret"/);

    const rotated = await gql(
      owner,
      'mutation($id: ID!) { rotateWebhookSecret(id: $id) { id secret previousSecretExpiresAt } }',
      { id: webhook.id },
    );
    expect(rotated.data.rotateWebhookSecret).toEqual({
      id: webhook.id,
      secret: expect.stringMatching(/^whsec_/),
      previousSecretExpiresAt: expect.any(String),
    });
    expect(rotated.data.rotateWebhookSecret.secret).not.toBe(secret);

    const enabled = await gql(owner, 'mutation($id: ID!) { enableWebhook(id: $id) { id status } }', {
      id: webhook.id,
    });
    expect(enabled.data.enableWebhook).toEqual({ id: webhook.id, status: 'ENABLED' });

    const replayed = await gql(
      owner,
      'mutation($id: ID!, $after: String) { replayWebhook(id: $id, after: $after) { id replayFrom } }',
      { id: webhook.id, after: '2' },
    );
    expect(replayed.data.replayWebhook).toEqual({ id: webhook.id, replayFrom: '2' });
    const fromStart = await gql(owner, 'mutation($id: ID!) { replayWebhook(id: $id) { replayFrom } }', {
      id: webhook.id,
    });
    expect(fromStart.data.replayWebhook).toEqual({ replayFrom: '0' });

    await env.app.db
      .insertInto('webhook_deliveries')
      .values(
        [1, 2, 3].map((n) => ({
          endpoint_id: webhook.id,
          event_id: `evt_${n}`,
          sequence: BigInt(n),
          attempt: 1,
          status_code: 200,
          error: null,
          duration_ms: n,
          delivered: true,
          next_attempt_at: null,
        })),
      )
      .execute();
    const page = await gql(
      owner,
      `query($id: ID!, $after: String) { webhookDeliveries(id: $id, first: 2, after: $after) {
        deliveries { eventId sequence attempt statusCode error durationMs delivered nextAttemptAt createdAt }
        hasMore nextCursor } }`,
      { id: webhook.id },
    );
    expect(page.errors).toBeUndefined();
    expect(page.data.webhookDeliveries.hasMore).toBe(true);
    expect(
      (page.data.webhookDeliveries.deliveries as Array<{ sequence: string }>).map((d) => d.sequence),
    ).toEqual(['3', '2']);
    expect(page.data.webhookDeliveries.deliveries[0]).toEqual({
      eventId: 'evt_3',
      sequence: '3',
      attempt: 1,
      statusCode: 200,
      error: null,
      durationMs: 3,
      delivered: true,
      nextAttemptAt: null,
      createdAt: expect.any(String),
    });
    const next = await gql(
      owner,
      'query($id: ID!, $after: String) { webhookDeliveries(id: $id, first: 2, after: $after) { deliveries { sequence } hasMore nextCursor } }',
      { id: webhook.id, after: page.data.webhookDeliveries.nextCursor },
    );
    expect(next.data.webhookDeliveries).toEqual({
      deliveries: [{ sequence: '1' }],
      hasMore: false,
      nextCursor: null,
    });

    const deleted = await gql(owner, 'mutation($id: ID!) { deleteWebhook(id: $id) }', { id: webhook.id });
    expect(deleted.data).toEqual({ deleteWebhook: true });
    expect((await gql(owner, '{ webhooks { id } }')).data.webhooks).toEqual([]);
  });

  test('errors carry the REST codes: bad input, refused URL, not found, the limit, a lesser key', async () => {
    const owner = await member();
    const codeOf = (answer: { errors?: any[] }) => answer.errors?.[0]?.extensions?.code as string | undefined;
    const createMutation =
      'mutation($url: String!, $events: [String!]) { createWebhook(url: $url, events: $events) { secret } }';

    const refused = await gql(owner, createMutation, { url: 'http://169.254.169.254/' });
    expect(codeOf(refused)).toBe('BAD_USER_INPUT');
    expect(refused.errors![0].message).toMatch(/url refused: .*link-local/);
    expect(codeOf(await gql(owner, createMutation, { url: HOOK, events: ['nope'] }))).toBe('BAD_USER_INPUT');
    expect(codeOf(await gql(owner, createMutation, { url: HOOK, events: [] }))).toBe('BAD_USER_INPUT');

    for (const n of [1, 2, 3, 4, 5]) {
      expect((await gql(owner, createMutation, { url: `${HOOK}/${n}` })).errors).toBeUndefined();
    }
    const sixth = await gql(owner, createMutation, { url: `${HOOK}/6` });
    expect(codeOf(sixth)).toBe('CONFLICT');

    for (const id of [UNKNOWN_ID, 'not-a-uuid']) {
      expect(codeOf(await gql(owner, 'mutation($id: ID!) { deleteWebhook(id: $id) }', { id }))).toBe(
        'NOT_FOUND',
      );
      expect(codeOf(await gql(owner, 'mutation($id: ID!) { enableWebhook(id: $id) { id } }', { id }))).toBe(
        'NOT_FOUND',
      );
      expect(
        codeOf(await gql(owner, 'query($id: ID!) { webhookDeliveries(id: $id) { hasMore } }', { id })),
      ).toBe('NOT_FOUND');
    }
    const ownId = (await gql(owner, '{ webhooks { id } }')).data.webhooks[0].id as string;
    const stranger = await member();
    expect(
      codeOf(
        await gql(stranger, 'mutation($id: ID!) { rotateWebhookSecret(id: $id) { secret } }', { id: ownId }),
      ),
    ).toBe('NOT_FOUND');
    expect(
      codeOf(
        await gql(owner, 'mutation($id: ID!) { replayWebhook(id: $id, after: "x") { id } }', { id: ownId }),
      ),
    ).toBe('BAD_USER_INPUT');

    const lesser = { ...owner, key: (await createLesserKey(owner, ['read', 'post', 'engage'])).key };
    for (const [query, variables] of [
      ['{ webhooks { id } }', {}],
      [createMutation, { url: HOOK }],
      ['mutation($id: ID!) { rotateWebhookSecret(id: $id) { secret } }', { id: ownId }],
      ['mutation($id: ID!) { deleteWebhook(id: $id) }', { id: ownId }],
      ['mutation($id: ID!) { replayWebhook(id: $id) { id } }', { id: ownId }],
    ] as const) {
      const answer = await gql(lesser, query, variables);
      expect(codeOf(answer), query).toBe('FORBIDDEN');
      expect(answer.errors![0].message).toMatch(/'send' scope/);
    }
    expect((await gql(owner, '{ webhooks { id } }')).data.webhooks).toHaveLength(5);
  });
});
