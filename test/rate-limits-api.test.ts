import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { buildServer } from '../src/api/server.js';
import { openApp, type App } from '../src/app/wiring.js';
import { createRateLimiter } from '../src/adapters/redis/rate-limiter.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { depositUsdc } from './support/deposit.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
let second: App;
const servers: FastifyInstance[] = [];
const bases: string[] = [];

beforeAll(async () => {
  // No payments worker here: paid posts answer 202 pending after 50 ms instead of waiting.
  env = await openTestEnv({ WRITE_TIMEOUT_MS: '50' }, { chain: true });
  // A second API process: its own pools and Redis connection, the same deployment.
  second = openApp(env.config, pino({ level: 'silent' }), env.app.stack);
  for (const app of [env.app, second]) {
    const server = await buildServer(app);
    servers.push(server);
    bases.push(await server.listen({ port: 0, host: '127.0.0.1' }));
  }
});
afterAll(async () => {
  for (const server of servers) await server.close();
  await second?.close();
  await env?.close();
});

const me = (base: string, key: string) =>
  fetch(`${base}/api/v1/me`, { headers: { authorization: `Bearer ${key}` } });

test(
  'two API processes share one per-account budget; the request past it is 429 with Retry-After',
  { timeout: 90_000 },
  async () => {
    const account = await createAccount(env.app, { handle: 'reader_1' });
    const first = await createApiKey(env.app.apiKeys, account.id);
    const other = await createApiKey(env.app.apiKeys, account.id);
    // 60 reads per minute per account: 30 through each process, half with each key.
    for (let i = 0; i < 60; i++) {
      const response = await me(bases[i % 2]!, i % 4 < 2 ? first.key : other.key);
      expect(response.status, `read ${i + 1}`).toBe(200);
      expect(response.headers.get('ratelimit')).toBe(
        `"read";r=${59 - i};t=${response.headers.get('ratelimit')!.split('t=')[1]}`,
      );
    }
    for (const base of bases) {
      const refused = await me(base, first.key);
      expect(refused.status).toBe(429);
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
      expect(await refused.json()).toEqual({
        error: 'rate_limited',
        message: expect.stringMatching(/^Rate limit exceeded/),
      });
    }
  },
);

const signUp = (base: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}/api/v1/accounts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

async function expectRateLimited(response: Response, context: string): Promise<void> {
  expect(response.status, context).toBe(429);
  const retryAfter = Number(response.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 3_600, context).toBe(true);
  expect(await response.json(), context).toEqual({
    error: 'rate_limited',
    message: expect.stringMatching(/^Rate limit exceeded/),
  });
}

test('50 sign-ups with a rotating X-Forwarded-For get the budget of one client: 5 per hour', async () => {
  const statuses: number[] = [];
  for (let i = 0; i < 50; i++) {
    // One real sign-up, then invalid handles: they spend the per-IP budget too (it is checked
    // before the body) without work.
    const response = await signUp(
      bases[0]!,
      { handle: i === 0 ? 'spoofer' : 'NOT VALID' },
      {
        'x-forwarded-for': `198.51.100.${i + 1}`,
        'x-forwarded-host': `spoofed-${i}.example`,
        'x-forwarded-proto': 'https',
      },
    );
    statuses.push(response.status);
    if (i === 0) {
      // X-Forwarded-Host and -Proto do not count either: the URLs we hand out are ours.
      const { account } = (await response.json()) as { account: { avatar_url: string } };
      expect(account.avatar_url.startsWith(`${bases[0]}/avatars/`), account.avatar_url).toBe(true);
    } else if (i >= 5) await expectRateLimited(response, `sign-up ${i + 1}`);
    else await response.body?.cancel();
  }
  expect(statuses.slice(0, 5)).toEqual([201, 400, 400, 400, 400]);
  // The other process shares the budget of this client too.
  await expectRateLimited(await signUp(bases[1]!, { handle: 'NOT VALID' }), 'second process');
});

test('behind TRUST_PROXY_HOPS=1 the client is the rightmost X-Forwarded-For entry', async () => {
  // A proxy of ours appends the address it saw; what the client wrote further left is ignored.
  const server = await buildServer({ ...env.app, trustProxyHops: 1 });
  try {
    const base = await server.listen({ port: 0, host: '127.0.0.1' });
    for (let i = 0; i < 5; i++) {
      const response = await signUp(
        base,
        { handle: 'NOT VALID' },
        { 'x-forwarded-for': `10.9.9.${i}, 203.0.113.9` },
      );
      expect(response.status, `sign-up ${i + 1}`).toBe(400);
    }
    await expectRateLimited(
      await signUp(base, { handle: 'NOT VALID' }, { 'x-forwarded-for': '10.9.9.77, 203.0.113.9' }),
      'sixth from 203.0.113.9',
    );
    // Another client behind the same proxy has its own budget.
    expect((await signUp(base, { handle: 'NOT VALID' }, { 'x-forwarded-for': '203.0.113.10' })).status).toBe(
      400,
    );
  } finally {
    await server.close();
  }
});

test('an IPv6 client is budgeted by its /64: rotating the other 64 bits buys nothing', async () => {
  const server = await buildServer({ ...env.app, trustProxyHops: 1 });
  try {
    const base = await server.listen({ port: 0, host: '127.0.0.1' });
    const from = (address: string) => ({ 'x-forwarded-for': address });
    for (let i = 1; i <= 5; i++) {
      const response = await signUp(base, { handle: 'NOT VALID' }, from(`2001:db8:7:7::${i.toString(16)}`));
      expect(response.status, `sign-up ${i}`).toBe(400);
    }
    await expectRateLimited(
      await signUp(base, { handle: 'NOT VALID' }, from('2001:db8:7:7:abcd:1234:5678:9abc')),
      'sixth from the same /64',
    );
    // The next /64 is another subscriber.
    expect((await signUp(base, { handle: 'NOT VALID' }, from('2001:db8:7:8::1'))).status).toBe(400);
  } finally {
    await server.close();
  }
});

test(
  'a global sign-up budget holds many addresses together; invalid sign-ups do not spend it',
  { timeout: 60_000 },
  async () => {
    // Multiplier 0.03: 1 sign-up per IP and 3 for the whole deployment per hour, on a limiter
    // of its own (a prefix no other test spends from). Each X-Forwarded-For is another client.
    const server = await buildServer({
      ...env.app,
      trustProxyHops: 1,
      rateLimiter: createRateLimiter(env.app.redis, {
        prefix: `${env.config.REDIS_PREFIX}-global`,
        multiplier: 0.03,
      }),
    });
    try {
      const base = await server.listen({ port: 0, host: '127.0.0.1' });
      const from = (ip: string) => ({ 'x-forwarded-for': ip });
      // Refused by validation: not counted against the deployment.
      for (let i = 0; i < 4; i++) {
        expect((await signUp(base, { handle: 'NOT VALID' }, from(`192.0.2.${i + 1}`))).status).toBe(400);
      }
      for (let i = 0; i < 3; i++) {
        const response = await signUp(base, { handle: `farm_${i}` }, from(`192.0.2.${i + 11}`));
        expect(response.status, await response.text()).toBe(201);
      }
      const refused = await signUp(base, { handle: 'farm_3' }, from('192.0.2.14'));
      // The global budget announces nothing: its count would tell how many accounts were opened.
      expect(refused.headers.get('ratelimit-policy')).toBe('"signup";q=1;w=3600');
      await expectRateLimited(refused, 'fourth address');
      expect(await env.app.accounts.byHandle('farm_3')).toBeUndefined();
    } finally {
      await server.close();
    }
  },
);

test(
  'the 11th post in a minute is 429 with Retry-After, and is not charged',
  { timeout: 90_000 },
  async () => {
    const account = await createAccount(env.app, { handle: 'poster_1' });
    const { key } = await createApiKey(env.app.apiKeys, account.id);
    const platform = await env.app.bootstrapChain();
    await depositUsdc(env.app, platform, account, 20_000_000n);
    const send = () =>
      fetch(`${bases[0]}/api/v1/posts`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'post', content: 'counting' }),
      });
    for (let i = 0; i < 10; i++) expect([201, 202]).toContain((await send()).status);
    const refused = await send();
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter >= 1 && retryAfter <= 60).toBe(true);
    expect(refused.headers.get('ratelimit-policy')).toBe('"post";q=10;w=60');
    expect((await env.app.ledger.money(account.id)).availableMicro).toBe(10_000_000n);
  },
);
