import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { buildServer } from '../src/api/server.js';
import { openApp, type App } from '../src/app/app.js';
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

/** Windows are whole minutes: start a burst early in one so it cannot straddle two. */
async function awaitFreshWindow(): Promise<void> {
  const intoMinute = Date.now() % 60_000;
  if (intoMinute > 50_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - intoMinute + 50));
}

const me = (base: string, key: string) =>
  fetch(`${base}/api/v1/me`, { headers: { authorization: `Bearer ${key}` } });

test(
  'two API processes share one per-account budget; the request past it is 429 with Retry-After',
  { timeout: 90_000 },
  async () => {
    const account = await createAccount(env.app, { handle: 'reader_1' });
    const first = await createApiKey(env.app.apiKeys, account.id);
    const other = await createApiKey(env.app.apiKeys, account.id);
    await awaitFreshWindow();
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

test('sign-up is limited per client IP', { timeout: 60_000 }, async () => {
  let status = 0;
  let attempts = 0;
  // Invalid handles spend the budget too (the limit runs before validation) without chain work.
  while (status !== 429 && attempts < 10) {
    attempts++;
    const response = await fetch(`${bases[0]}/api/v1/accounts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ handle: 'NOT VALID' }),
    });
    status = response.status;
  }
  expect(status).toBe(429);
  expect(attempts).toBe(6);
});

test(
  'the 11th post in a minute is 429 with Retry-After, and is not charged',
  { timeout: 90_000 },
  async () => {
    const account = await createAccount(env.app, { handle: 'poster_1' });
    const { key } = await createApiKey(env.app.apiKeys, account.id);
    const platform = await env.app.bootstrapChain();
    await depositUsdc(env.app, platform, account, 20_000_000n);
    await awaitFreshWindow();
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
