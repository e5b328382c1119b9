import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { fundUsdc } from '../src/adapters/solana/index.js';
import { buildServer } from '../src/api/server.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { processorsFor } from '../workers/processors.js';
import type { RunningRole } from '../workers/role.js';
import { startWorkerRole } from '../workers/worker.role.js';
import { settledMoney } from './support/balances.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
let server: FastifyInstance;
let worker: RunningRole;
let base: string;
let key: string;
let accountId: string;

beforeAll(async () => {
  env = await openTestEnv({ RATE_LIMIT_MULTIPLIER: '0' }, { chain: true });
  const platform = await env.app.bootstrapChain();
  server = await buildServer(env.app);
  base = await server.listen({ port: 0, host: '127.0.0.1' });
  worker = await startWorkerRole(env.app, processorsFor(env.app));
  const account = await createAccount(env.app, { handle: 'idem_user' });
  accountId = account.id;
  key = (await createApiKey(env.app.apiKeys, account.id)).key;
  const { signature } = await fundUsdc(env.app.rpc, platform, account.walletAddress, 5_000_000n);
  await env.app.ledger.record({
    kind: 'deposit',
    idempotencyKey: `deposit:${signature}`,
    legs: [
      { account: { kind: 'external' }, amountMicro: -5_000_000n, counts: 'none' },
      { account: { kind: 'user', accountId }, amountMicro: 5_000_000n, counts: 'none' },
    ],
  });
});
afterAll(async () => {
  await worker?.stop();
  await server?.close();
  await env?.close();
});

const post = (idempotencyKey: string, content: string) =>
  fetch(`${base}/api/v1/posts`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'idempotency-key': idempotencyKey,
    },
    body: JSON.stringify({ type: 'post', content }),
  });

const balance = async () => (await settledMoney(env.app, accountId)).availableMicro;

describe('Idempotency-Key on money-moving POSTs', () => {
  test('a replay after completion returns the first answer and charges once', async () => {
    const first = await post('key-after', 'once');
    expect(first.status).toBe(201);
    const firstBody = await first.text();
    const again = await post('key-after', 'once');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(firstBody);
    expect(await balance()).toBe(4_000_000n);
  });

  test('two requests in flight with one key charge once and answer the same', async () => {
    const [a, b] = await Promise.all([post('key-flight', 'racing'), post('key-flight', 'racing')]);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(await a.text()).toBe(await b.text());
    expect(await balance()).toBe(3_000_000n);
  });

  test('the same key with another body is 422', async () => {
    const response = await post('key-after', 'different');
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual({
      error: 'idempotency_key_reused',
      message: 'This Idempotency-Key was used with a different request',
    });
    expect(await balance()).toBe(3_000_000n);
  });
});
