import { sql } from 'kysely';
import type { PublicKey } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { onChainUsdc as onChainUsdcOf, settledMoney } from './support/balances.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';

let h: ServiceHarness;

beforeAll(async () => {
  // Limits off: the concurrency test sends 50 posts at once from one account.
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
});
afterAll(async () => {
  await h?.close();
});

const post = (who: Member, body: unknown) => h.call(who, 'POST', '/posts', body);

const onChainUsdc = (owner: string | PublicKey) => onChainUsdcOf(h.env.app, h.platform, owner);

/** Ledger = chain for the user, and the whole ledger balances. */
async function expectReconciled(who: Member) {
  expect((await settledMoney(h.env.app, who.account.id)).availableMicro).toBe(
    await onChainUsdc(who.account.walletAddress),
  );
  const { rows } = await sql<{
    total: string;
  }>`SELECT coalesce(sum(amount), 0)::text AS total FROM ledger_legs`.execute(h.env.app.db);
  expect(rows[0]?.total).toBe('0');
}

describe('POST /api/v1/posts', () => {
  let alice: Member;
  let alicePostId: string;

  test('a post costs $1, answers the spec shape with a confirmed swap_tx, and ledger equals chain', async () => {
    alice = await h.member('alice_w', 3_000_000n);
    const treasuryBefore = await onChainUsdc(h.platform.signers.treasury.publicKey);
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
    const [status] = await h.env.app.rpc.getSignatureStatuses([body.swap_tx]);
    expect(status?.err).toBeNull();
    expect(await onChainUsdc(alice.account.walletAddress)).toBe(2_000_000n);
    expect((await onChainUsdc(h.platform.signers.treasury.publicKey)) - treasuryBefore).toBe(1_000_000n);
    await expectReconciled(alice);
  });

  test('a reply pays the parent author 50% in the same transaction', async () => {
    const bob = await h.member('bob_w', 2_000_000n);
    const response = await post(bob, { type: 'reply', content: 'agreed', parent_id: alicePostId });
    expect(response.status).toBe(201);
    expect(await onChainUsdc(alice.account.walletAddress)).toBe(2_500_000n);
    expect(await settledMoney(h.env.app, alice.account.id)).toMatchObject({
      availableMicro: 2_500_000n,
      totalEarnedMicro: 500_000n,
    });
    await expectReconciled(alice);
    await expectReconciled(bob);
  });

  test('without the money: 402 insufficient_balance with both amounts, and nothing moves', async () => {
    const carol = await h.member('carol_w', 0n);
    const response = await post(carol, { type: 'post', content: 'free?' });
    expect(response.status).toBe(402);
    expect(await response.json()).toEqual({
      error: 'insufficient_balance',
      message: expect.stringMatching(/Insufficient balance/),
      balance_usd: 0,
      required_usd: 1,
    });
    expect(
      await h.env.app.db.selectFrom('posts').select('id').where('author_id', '=', carol.account.id).execute(),
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
      const dave = await h.member('dave_w', 10_000_000n);
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
