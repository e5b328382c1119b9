import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildServer } from '../src/api/server.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { EVENT_TYPES } from '../src/domain/events/event-types.js';
import { startWebhookDispatcherLoop } from '../workers/webhook-dispatcher.loop.js';
import { emitEvents, likes } from './support/staged-events.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';
import { until } from './support/until.js';
import {
  signatureCount,
  startWebhookReceiver,
  verifiedWith,
  type WebhookReceiver,
} from './support/webhook-receiver.js';

/*
 * Issue 49 item 6: webhook signing secrets are sealed with the master key in Postgres, so a dump
 * or a read replica cannot forge deliveries. Endpoints are created and rotated over REST, then
 * every column of every table in this file's database is searched for each secret the owner was
 * given, in every spelling it could be stored in; the dispatcher still signs with them.
 */

let env: TestEnv;
let server: FastifyInstance;
let base: string;
let dispatcher: ReturnType<typeof startWebhookDispatcherLoop>;
let hook: WebhookReceiver;

beforeAll(async () => {
  env = await openTestEnv();
  server = await buildServer(env.app, { queueBoard: false });
  base = await server.listen({ port: 0, host: '127.0.0.1' });
  hook = await startWebhookReceiver();
  dispatcher = startWebhookDispatcherLoop(env.app);
});
afterAll(async () => {
  await dispatcher?.stop();
  await hook?.close();
  await server?.close();
  await env?.close();
});

async function call(key: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

/** Every spelling a secret could be stored in: as given, its random part, its bytes in hex and base64. */
function spellings(secret: string): string[] {
  const random = secret.replace(/^whsec_/, '');
  const bytes = Buffer.from(random, 'base64url');
  const utf8 = Buffer.from(secret, 'utf8');
  return [
    secret,
    random,
    bytes.toString('hex'),
    bytes.toString('base64'),
    bytes.toString('base64').replace(/=+$/, ''),
    utf8.toString('hex'),
    utf8.toString('base64').replace(/=+$/, ''),
    utf8.toString('base64url'),
  ];
}

/** `schema.table.column` of every column in the database holding any of `needles` (as text). */
async function columnsHolding(needles: string[]): Promise<string[]> {
  const { rows: columns } = await sql<{ table_schema: string; table_name: string; column_name: string }>`
    SELECT c.table_schema, c.table_name, c.column_name
      FROM information_schema.columns c
      JOIN information_schema.tables t USING (table_schema, table_name)
     WHERE t.table_type = 'BASE TABLE'
       AND c.table_schema NOT IN ('pg_catalog', 'information_schema')
     ORDER BY c.table_schema, c.table_name, c.ordinal_position`.execute(env.app.db);
  expect(columns.length).toBeGreaterThan(50);
  const found: string[] = [];
  for (const { table_schema, table_name, column_name } of columns) {
    // Every type read as text: text, varchar, json(b), arrays, and bytea (as \x hex, so lower-case).
    const { rows } = await sql<{ hits: number }>`
      SELECT count(*)::int AS hits
        FROM ${sql.table(`${table_schema}.${table_name}`)}
       WHERE ${sql.ref(column_name)}::text LIKE ANY (${needles.map((n) => `%${n}%`)}::text[])
          OR lower(${sql.ref(column_name)}::text) LIKE ANY (${needles.map((n) => `%${n.toLowerCase()}%`)}::text[])`.execute(
      env.app.db,
    );
    if (rows[0]!.hits > 0) found.push(`${table_schema}.${table_name}.${column_name}`);
  }
  return found;
}

async function emit(accountId: string, count: number) {
  await emitEvents(env.app.db, likes(accountId, count));
  dispatcher.wake();
}

let handles = 0;
async function member() {
  const account = await createAccount(env.app, { handle: `sr_${process.pid % 1000}_${handles++}` });
  const { key } = await createApiKey(env.app.apiKeys, account.id);
  return { id: account.id, key };
}

describe('webhook secrets at rest', () => {
  test('no column of the database holds a secret the owner was given; deliveries verify with them', async () => {
    const alice = await member();
    const bob = await member();
    const created = await call(alice.key, 'POST', '/webhooks', { url: hook.url });
    expect(created.status).toBe(201);
    const first: string = created.body.secret;
    const rotated = await call(alice.key, 'POST', `/webhooks/${created.body.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    const second: string = rotated.body.secret;
    const other = await call(bob.key, 'POST', '/webhooks', { url: `${hook.url}/bob` });
    expect(other.status).toBe(201);
    const bobs: string = other.body.secret;
    for (const secret of [first, second, bobs]) expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);

    // Deliveries (and their log rows) first, so every table that could ever hold a copy has rows.
    await emit(alice.id, 2);
    await emit(bob.id, 1);
    await until(
      '3 deliveries',
      () => Promise.resolve(hook.delivered().length),
      (n) => n >= 3,
      15_000,
    );
    for (const request of hook.requests) {
      const header = request.headers['ledgerfeed-signature'];
      if (verifiedWith(bobs, header, request.rawBody)) {
        expect(signatureCount(header)).toBe(1);
      } else {
        // Alice's endpoint, mid-rotation: each of her two secrets signs.
        expect(signatureCount(header)).toBe(2);
        expect(verifiedWith(second, header, request.rawBody)).toBe(true);
        expect(verifiedWith(first, header, request.rawBody)).toBe(true);
      }
    }
    expect(
      hook.requests.filter((r) => verifiedWith(bobs, r.headers['ledgerfeed-signature'], r.rawBody)),
    ).toHaveLength(1);

    const needles = [first, second, bobs].flatMap(spellings);
    expect(await columnsHolding(needles)).toEqual([]);
  });

  test('a secret stored in clear before sealing is sealed at start and still signs', async () => {
    const carol = await member();
    const legacy = 'whsec_' + Buffer.alloc(32, 7).toString('base64url');
    const legacyPrevious = 'whsec_' + Buffer.alloc(32, 9).toString('base64url');
    // A row as the code before sealing wrote it (the constraint the migration added forbids that now).
    await sql`ALTER TABLE webhook_endpoints DROP CONSTRAINT IF EXISTS webhook_endpoints_secrets_sealed`.execute(
      env.app.db,
    );
    await env.app.db
      .insertInto('webhook_endpoints')
      .values({
        account_id: carol.id,
        url: `${hook.url}/carol`,
        event_types: [...EVENT_TYPES],
        secret: legacy,
        previous_secret: legacyPrevious,
        previous_secret_expires_at: new Date(Date.now() + 3_600_000),
      })
      .execute();
    await sql`ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_secrets_sealed
      CHECK (secret LIKE 'whseal1.%' AND (previous_secret IS NULL OR previous_secret LIKE 'whseal1.%')) NOT VALID`.execute(
      env.app.db,
    );
    expect(await columnsHolding([...spellings(legacy), legacyPrevious])).toEqual([
      'public.webhook_endpoints.secret',
      'public.webhook_endpoints.previous_secret',
    ]);

    // What every start does after the schema migrations.
    await env.app.migrate();
    expect(await columnsHolding([...spellings(legacy), legacyPrevious])).toEqual([]);
    const { rows } = await sql<{ convalidated: boolean }>`
      SELECT convalidated FROM pg_constraint WHERE conname = 'webhook_endpoints_secrets_sealed'`.execute(
      env.app.db,
    );
    expect(rows).toEqual([{ convalidated: true }]);

    const before = hook.requests.length;
    await emit(carol.id, 1);
    await until(
      'carol’s delivery',
      () => Promise.resolve(hook.requests.length),
      (n) => n > before,
      15_000,
    );
    const request = hook.requests.at(-1)!;
    expect(request.headers['ledgerfeed-signature']).toBeDefined();
    expect(verifiedWith(legacy, request.headers['ledgerfeed-signature'], request.rawBody)).toBe(true);
    expect(verifiedWith(legacyPrevious, request.headers['ledgerfeed-signature'], request.rawBody)).toBe(true);
  });
});
