import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import type { PublicKey } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { PlatformChain } from '../src/adapters/solana/index.js';
import { buildServer } from '../src/api/server.js';
import type { Account } from '../src/domain/accounts/account.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { processorsFor } from '../workers/processors.js';
import type { RunningRole } from '../workers/role.js';
import { startWorkerRole } from '../workers/worker.role.js';
import { depositUsdc } from './support/deposit.js';
import { onChainUsdc as onChainUsdcOf, settledMoney } from './support/balances.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
let server: FastifyInstance;
let worker: RunningRole;
let base: string;
let platform: PlatformChain;

interface Member {
  account: Account;
  key: string;
}

beforeAll(async () => {
  // Limits off: the concurrency test sends 50 posts at once from one account.
  env = await openTestEnv({ RATE_LIMIT_MULTIPLIER: '0' }, { chain: true });
  platform = await env.app.bootstrapChain();
  server = await buildServer(env.app);
  base = await server.listen({ port: 0, host: '127.0.0.1' });
  worker = await startWorkerRole(env.app, processorsFor(env.app));
});
afterAll(async () => {
  await worker?.stop();
  await server?.close();
  await env?.close();
});

async function member(handle: string, usdMicro: bigint): Promise<Member> {
  const account = await createAccount(env.app, { handle });
  const { key } = await createApiKey(env.app.apiKeys, account.id);
  if (usdMicro > 0n) {
    await depositUsdc(env.app, platform, account, usdMicro);
  }
  return { account, key };
}

const post = (who: Member, body: unknown) =>
  fetch(`${base}/api/v1/posts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${who.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

const onChainUsdc = (owner: string | PublicKey) => onChainUsdcOf(env.app, platform, owner);

/** Ledger = chain for the user, and the whole ledger balances. */
async function expectReconciled(who: Member) {
  expect((await settledMoney(env.app, who.account.id)).availableMicro).toBe(
    await onChainUsdc(who.account.walletAddress),
  );
  const { rows } = await sql<{
    total: string;
  }>`SELECT coalesce(sum(amount), 0)::text AS total FROM ledger_legs`.execute(env.app.db);
  expect(rows[0]?.total).toBe('0');
}

describe('POST /api/v1/posts', () => {
  let alice: Member;
  let alicePostId: string;

  test('a post costs $1, answers the spec shape with a confirmed swap_tx, and ledger equals chain', async () => {
    alice = await member('alice_w', 3_000_000n);
    const treasuryBefore = await onChainUsdc(platform.signers.treasury.publicKey);
    const response = await post(alice, { type: 'post', content: 'gm, paid' });
    expect(response.status).toBe(201);
    const body = (await response.json()) as Record<string, any>;
    expect(body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      content: 'gm, paid',
      type: 'post',
      author: { handle: 'alice_w', wallet_address: alice.account.walletAddress },
      cost_usd_micro: 1_000_000,
      swap_tx: expect.stringMatching(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/),
      created_at: expect.any(String),
    });
    alicePostId = body.id;
    const [status] = await env.app.rpc.getSignatureStatuses([body.swap_tx]);
    expect(status?.err).toBeNull();
    expect(await onChainUsdc(alice.account.walletAddress)).toBe(2_000_000n);
    expect((await onChainUsdc(platform.signers.treasury.publicKey)) - treasuryBefore).toBe(1_000_000n);
    await expectReconciled(alice);
  });

  test('a reply pays the parent author 50% in the same transaction', async () => {
    const bob = await member('bob_w', 2_000_000n);
    const response = await post(bob, { type: 'reply', content: 'agreed', parent_id: alicePostId });
    expect(response.status).toBe(201);
    expect(await onChainUsdc(alice.account.walletAddress)).toBe(2_500_000n);
    expect(await settledMoney(env.app, alice.account.id)).toMatchObject({
      availableMicro: 2_500_000n,
      totalEarnedMicro: 500_000n,
    });
    await expectReconciled(alice);
    await expectReconciled(bob);
  });

  test('without the money: 402 insufficient_balance with both amounts, and nothing moves', async () => {
    const carol = await member('carol_w', 0n);
    const response = await post(carol, { type: 'post', content: 'free?' });
    expect(response.status).toBe(402);
    expect(await response.json()).toEqual({
      error: 'insufficient_balance',
      message: expect.stringMatching(/Insufficient balance/),
      balance_usd: 0,
      required_usd: 1,
    });
    expect(
      await env.app.db.selectFrom('posts').select('id').where('author_id', '=', carol.account.id).execute(),
    ).toEqual([]);
  });

  test('a reply to an unknown post is 404; a reply without parent_id is 400', async () => {
    const missing = await post(alice, {
      type: 'reply',
      content: 'to whom',
      parent_id: '00000000-0000-4000-8000-000000000000',
    });
    expect(missing.status).toBe(404);
    const noParent = await post(alice, { type: 'reply', content: 'to whom' });
    expect(noParent.status).toBe(400);
  });

  test(
    '50 concurrent $1 posts from an account holding $10: exactly 10 land, 40 are 402; ledger = chain = 0',
    { timeout: 120_000 },
    async () => {
      const dave = await member('dave_w', 10_000_000n);
      const statuses = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          post(dave, { type: 'post', content: `burst ${i}` }).then((r) => r.status),
        ),
      );
      expect(statuses.filter((s) => s === 201)).toHaveLength(10);
      expect(statuses.filter((s) => s === 402)).toHaveLength(40);
      expect(await onChainUsdc(dave.account.walletAddress)).toBe(0n);
      await expectReconciled(dave);
    },
  );
});
