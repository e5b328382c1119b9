import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { HostResolver } from '../src/adapters/http/webhook-address.js';
import { buildServer } from '../src/api/server.js';
import { createWebhook, webhookDeliveries } from '../src/app/webhooks/manage-webhooks.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { ALL_SCOPES } from '../src/domain/auth/api-key.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { startWebhookDispatcherLoop } from '../workers/webhook-dispatcher.loop.js';
import { postGraphql } from './support/graphql.js';
import { loopbackOnlySockets } from './support/loopback-only-sockets.js';
import { emitEvents } from './support/staged-events.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';
import { until } from './support/until.js';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.js';

/*
 * Issue 49 item 5: a webhook URL's refusal (at registration over REST and GraphQL, and in the
 * delivery log after a DNS change) says which rule the URL broke, never the address a name
 * resolved to nor the resolver's own words (ENOTFOUND, EAI_AGAIN, ...): those describe the inside
 * of our network. A name that does not resolve and a name resolving to a private address read
 * the same, so probing names does not tell internal ones that exist from those that do not.
 *
 * Names are resolved by a table this file controls (injected into the API and the dispatcher);
 * every connection this process opens goes through a guard that throws for anything but loopback.
 */

const connectAttempts = loopbackOnlySockets();

/** What a resolver's table holds now; a name missing from it fails as getaddrinfo does. */
const dns: Record<string, string[] | 'EAI_AGAIN'> = {
  redis: ['172.18.0.5'],
  'cache.internal': ['10.1.2.3', 'fd00::7'],
  'metadata.internal': ['169.254.169.254'],
  'mixed.example.com': ['93.184.215.14', '192.168.1.10'],
  'flaky.example.com': 'EAI_AGAIN',
};
const resolveHost: HostResolver = (hostname) => {
  const found = dns[hostname];
  if (found === 'EAI_AGAIN')
    return Promise.reject(
      Object.assign(new Error(`getaddrinfo EAI_AGAIN ${hostname}`), { code: 'EAI_AGAIN' }),
    );
  if (!found)
    return Promise.reject(
      Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }),
    );
  return Promise.resolve(found);
};

const IPV4 = /\b\d{1,3}(\.\d{1,3}){3}\b/;
// Two or more hex groups around a colon, `::`, or an IPv4-mapped tail: what any IPv6 spelling has.
const IPV6 = /([0-9a-f]{1,4}:){2,}|::[0-9a-f]|[0-9a-f]::|::ffff/i;
const RESOLVER_WORDS = /E[A-Z]{2,}_?[A-Z]+|getaddrinfo|ENOTFOUND|EAI_|ENODATA|SERVFAIL|NXDOMAIN/;

function expectNothingInside(message: string) {
  expect(message).not.toMatch(IPV4);
  expect(message).not.toMatch(IPV6);
  expect(message).not.toMatch(RESOLVER_WORDS);
}

let env: TestEnv;
let server: FastifyInstance;
let base: string;
let handles = 0;

beforeAll(async () => {
  env = await openTestEnv();
  server = await buildServer({ ...env.app, resolveHost }, { queueBoard: false });
  base = await server.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await server?.close();
  await env?.close();
});

async function owner() {
  const account = await createAccount(env.app, { handle: `rf_${process.pid % 1000}_${handles++}` });
  const { key } = await createApiKey(env.app.apiKeys, account.id);
  return { id: account.id, key, viewer: { accountId: account.id, scopes: new Set(ALL_SCOPES) } };
}

async function register(key: string, url: string) {
  const response = await fetch(`${base}/api/v1/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('registration refusals', () => {
  test('a name resolving to a private address: 400 naming the rule, no address, no resolver code', async () => {
    const { key } = await owner();
    for (const url of [
      'https://redis/',
      'https://cache.internal/hook',
      'https://metadata.internal/latest/meta-data/',
      'https://mixed.example.com/hook',
    ]) {
      const answer = await register(key, url);
      expect(answer.status, url).toBe(400);
      expect(Object.keys(answer.body).sort()).toEqual(['error', 'message']);
      expect(answer.body.error).toBe('invalid_request');
      const message = String(answer.body.message);
      expect(message, url).toMatch(/^url refused: .*private address/);
      expectNothingInside(message);
    }
  });

  test('a name that does not resolve: 400 naming the rule, without the resolver’s words', async () => {
    const { key } = await owner();
    const missing = await register(key, 'https://no-such-host.internal/hook');
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('invalid_request');
    expect(String(missing.body.message)).toMatch(/^url refused: .*does not resolve/);
    expectNothingInside(String(missing.body.message));

    // Indistinguishable from a name that exists inside and resolves to a private address.
    const internal = await register(key, 'https://redis/');
    expect(internal.body.message).toBe(missing.body.message);

    const flaky = await register(key, 'https://flaky.example.com/hook');
    expect(flaky.status).toBe(400);
    expect(String(flaky.body.message)).toMatch(/^url refused: .*could not be resolved/);
    expectNothingInside(String(flaky.body.message));
  });

  test('GraphQL createWebhook refuses the same way (BAD_USER_INPUT), nothing registered', async () => {
    const { key } = await owner();
    for (const url of ['https://redis/', 'https://no-such-host.internal/']) {
      const response = await postGraphql(
        base,
        key,
        'mutation ($url: String!) { createWebhook(url: $url) { secret } }',
        { url },
      );
      const answer = (await response.json()) as {
        errors?: Array<{ message: string; extensions: { code: string } }>;
      };
      expect(answer.errors?.[0]?.extensions.code, url).toBe('BAD_USER_INPUT');
      expect(answer.errors![0]!.message).toMatch(
        /private address.*does not resolve|does not resolve.*private address/,
      );
      expectNothingInside(answer.errors![0]!.message);
    }
    const list = await fetch(`${base}/api/v1/webhooks`, { headers: { authorization: `Bearer ${key}` } });
    expect(((await list.json()) as { webhooks: unknown[] }).webhooks).toEqual([]);
  });
});

describe('the delivery log', () => {
  let hook: WebhookReceiver;
  let dispatcher: ReturnType<typeof startWebhookDispatcherLoop>;

  beforeAll(async () => {
    hook = await startWebhookReceiver();
    dispatcher = startWebhookDispatcherLoop(env.app, { resolve: resolveHost });
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await hook?.close();
  });

  async function emit(accountId: string) {
    await emitEvents(env.app.db, [
      { account_id: accountId, type: 'post.liked', data: JSON.stringify({ post_id: 'p', by: 'fan' }) },
    ]);
    dispatcher.wake();
  }

  test('after a DNS change the attempt’s error names the rule, not the address nor the resolver', async () => {
    const port = new URL(hook.url).port;
    const me = await owner();
    const deps = { ...env.app, resolveHost };
    dns['moving.example.com'] = ['127.0.0.1'];
    dns['vanishing.example.com'] = ['127.0.0.1'];
    const moving = await createWebhook(deps, me.viewer, { url: `http://moving.example.com:${port}/hooks` });
    const vanishing = await createWebhook(deps, me.viewer, {
      url: `http://vanishing.example.com:${port}/hooks`,
    });
    const closed = await createWebhook(deps, me.viewer, { url: 'http://127.0.0.1:9/hooks' });

    // The names move: one to a private address, one out of DNS.
    dns['moving.example.com'] = ['10.20.30.40', 'fd12::1'];
    delete dns['vanishing.example.com'];
    await emit(me.id);

    const errorOf = async (id: string) => {
      const page = await until(
        `the first attempt of ${id}`,
        () => webhookDeliveries(env.app, me.viewer, id, {}),
        (found) => found.deliveries.length > 0,
        15_000,
      );
      const [attempt] = page.deliveries;
      expect(attempt).toMatchObject({ delivered: false, statusCode: null });
      return attempt!.error!;
    };
    const privateError = await errorOf(moving.endpoint.id);
    const missingError = await errorOf(vanishing.endpoint.id);
    const refusedError = await errorOf(closed.endpoint.id);

    expect(privateError).toMatch(/private address/);
    expect(missingError).toMatch(/does not resolve/);
    expect(privateError).toBe(missingError);
    expect(refusedError).toBe('connection refused');
    for (const error of [privateError, missingError, refusedError]) expectNothingInside(error);
    // Refused before connecting: nothing went to the private address.
    expect(connectAttempts.filter((host) => !/^127\.|^localhost$|\.example\.com$/.test(host))).toEqual([]);
    expect(hook.requests).toHaveLength(0);
  });
});
