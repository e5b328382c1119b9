import { PublicKey } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { associatedTokenAccount } from '../src/adapters/solana/index.js';
import { onChainUsdc as onChainUsdcOf, settledMoney } from './support/balances.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';

let h: ServiceHarness;

beforeAll(async () => {
  // Limits off: this file sends more than 5 times from one account within a minute.
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
});
afterAll(async () => {
  await h?.close();
});

/** POST /send; a string body goes verbatim (raw JSON such as `1e-7`, which JSON.stringify never writes). */
const send = (who: Member, body: unknown) =>
  typeof body === 'string' ? h.callRaw(who, 'POST', '/send', body) : h.call(who, 'POST', '/send', body);

interface HistoryEntry {
  id: string;
  type: string;
  amount_usd: number;
  description: string;
  swap_tx: string | null;
  related_post_id: string | null;
  counterparty: string | null;
  created_at: string;
}

async function history(who: Member): Promise<HistoryEntry[]> {
  const response = await h.call(who, 'GET', '/me/transactions');
  expect(response.status).toBe(200);
  return ((await response.json()) as { transactions: HistoryEntry[] }).transactions;
}

const onChainUsdc = (owner: string | PublicKey) => onChainUsdcOf(h.env.app, h.platform, owner);

const money = (who: Member) => settledMoney(h.env.app, who.account.id);

describe('POST /api/v1/send', () => {
  let alice: Member;
  let bob: Member;

  beforeAll(async () => {
    alice = await h.member('send_alice', 5_000_000n);
    bob = await h.member('send_bob', 1_000_000n);
  });

  test('moves USDC on chain and in the ledger, exactly, and answers the spec shape', async () => {
    const response = await send(alice, { to_handle: '@send_bob', amount_usd: 1.25, memo: 'lunch' });
    expect(response.status).toBe(201);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      from: 'send_alice',
      to: 'send_bob',
      amount_usd: 1.25,
      swap_tx: expect.stringMatching(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/),
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    const [status] = await h.env.app.rpc.getSignatureStatuses([body.swap_tx as string]);
    expect(status?.err).toBeNull();

    expect(await onChainUsdc(alice.account.walletAddress)).toBe(3_750_000n);
    expect(await onChainUsdc(bob.account.walletAddress)).toBe(2_250_000n);
    expect(await money(alice)).toMatchObject({ availableMicro: 3_750_000n, totalSpentMicro: 1_250_000n });
    // A receive is not "earned".
    expect(await money(bob)).toMatchObject({ availableMicro: 2_250_000n, totalEarnedMicro: 0n });

    const row = await h.env.app.db
      .selectFrom('sends')
      .selectAll()
      .where('id', '=', body.id as string)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      sender_id: alice.account.id,
      recipient_id: bob.account.id,
      amount_micro: 1_250_000n,
      memo: 'lunch',
    });
    const event = await h.env.app.db
      .selectFrom('domain_events')
      .select(['type', 'actor_id', 'amount_micro'])
      .where('type', '=', 'send.created')
      .where('actor_id', '=', alice.account.id)
      .executeTakeFirstOrThrow();
    expect(event.amount_micro).toBe(1_250_000n);

    // The memo is on chain, in the transaction's Memo.
    const signatures = await h.env.app.rpc.call<Array<{ signature: string; memo: string | null }>>(
      'getSignaturesForAddress',
      [
        associatedTokenAccount(h.platform.usdcMint, new PublicKey(bob.account.walletAddress)).toBase58(),
        { limit: 10, commitment: 'confirmed' },
      ],
    );
    const mine = signatures.find((entry) => entry.signature === body.swap_tx);
    expect(mine?.memo).toContain(`ledgerfeed:send:${body.id as string}:lunch`);

    // Both histories: send / receive with the other party and the memo.
    const [sent] = await history(alice);
    expect(sent).toMatchObject({
      type: 'send',
      amount_usd: -1.25,
      counterparty: 'send_bob',
      related_post_id: null,
      swap_tx: body.swap_tx,
      description: 'Sent to @send_bob: lunch',
    });
    const [received] = await history(bob);
    expect(received).toMatchObject({
      id: sent!.id,
      type: 'receive',
      amount_usd: 1.25,
      counterparty: 'send_alice',
      related_post_id: null,
      swap_tx: body.swap_tx,
      description: 'Received from @send_alice: lunch',
    });
  });

  test('a string of digits is an amount too; no memo, no memo in the history', async () => {
    const response = await send(bob, { to_handle: 'send_alice', amount_usd: '0.500001' });
    expect(response.status).toBe(201);
    expect(await response.json()).toMatchObject({ from: 'send_bob', to: 'send_alice', amount_usd: 0.500001 });
    const [received] = await history(alice);
    expect(received).toMatchObject({
      type: 'receive',
      counterparty: 'send_bob',
      description: 'Received from @send_bob',
    });
    // 0.01 is the minimum, as a number.
    const min = await send(bob, { to_handle: 'send_alice', amount_usd: 0.01 });
    expect(min.status).toBe(201);
  });

  test('amounts below $0.01, with more than 6 decimals or in exponent notation are 400 naming amount_usd', async () => {
    for (const amount_usd of [0.009, 0.0000001, 1.0000001, '1e-7', -1, 0, '0.009', '0.000001', 'abc', '']) {
      const response = await send(alice, { to_handle: 'send_bob', amount_usd });
      expect(response.status, String(amount_usd)).toBe(400);
      const body = (await response.json()) as { error: string; message: string };
      expect(body.error).toBe('invalid_request');
      expect(body.message).toMatch(/amount_usd/);
    }
    const tooSmall = (await (await send(alice, { to_handle: 'send_bob', amount_usd: 0.009 })).json()) as {
      message: string;
    };
    expect(tooSmall.message).toMatch(/at least 0\.01/);
    // A raw JSON 1e-7 reaches us as the number 1e-7: refused, not rounded.
    const raw = await send(alice, '{"to_handle":"send_bob","amount_usd":1e-7}');
    expect(raw.status).toBe(400);
    const decimals = (await (await send(alice, { to_handle: 'send_bob', amount_usd: 1.1234567 })).json()) as {
      message: string;
    };
    expect(decimals.message).toMatch(/at most 6 decimals/);
    const longMemo = await send(alice, { to_handle: 'send_bob', amount_usd: 1, memo: 'x'.repeat(201) });
    expect(longMemo.status).toBe(400);
    expect(((await longMemo.json()) as { message: string }).message).toMatch(/memo must be at most 200/);
  });

  test('more than the balance is 402 with balance_usd and required_usd; nothing moves', async () => {
    const before = await money(alice);
    const response = await send(alice, { to_handle: 'send_bob', amount_usd: 1_000 });
    expect(response.status).toBe(402);
    expect(await response.json()).toEqual({
      error: 'insufficient_balance',
      message: expect.any(String),
      balance_usd: Number(before.availableMicro) / 1e6,
      required_usd: 1_000,
    });
    expect(await money(alice)).toEqual(before);
  });

  test('an unknown handle is 404, oneself 400', async () => {
    const unknown = await send(alice, { to_handle: 'nobody_here', amount_usd: 1 });
    expect(unknown.status).toBe(404);
    const self = await send(alice, { to_handle: '@send_alice', amount_usd: 1 });
    expect(self.status).toBe(400);
    expect(((await self.json()) as { message: string }).message).toMatch(/yourself/);
  });

  test("a key without the 'send' scope is 403", async () => {
    const reader = await h.member('send_reader', 2_000_000n, ['read', 'post', 'engage']);
    const response = await send(reader, { to_handle: 'send_bob', amount_usd: 1 });
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual({ error: 'forbidden', message: "API key lacks the 'send' scope" });
  });

  test('ledger equals chain for both parties after every send', async () => {
    for (const who of [alice, bob]) {
      expect((await money(who)).availableMicro).toBe(await onChainUsdc(who.account.walletAddress));
    }
  });
});
