import { PublicKey } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { associatedTokenAccount, type PlatformChain } from '../src/adapters/solana/index.js';
import type { Db } from '../src/adapters/postgres/db.js';
import { carriedRowsOf } from '../src/adapters/redis/payments-queue.js';
import { commitPost } from '../src/app/write-path/create-post.js';
import { settlePayment } from '../src/app/write-path/settle-payment.js';
import { drainOnChain } from './support/chain-tampering.js';
import { fundedAccount } from './support/deposit.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

/** The payments worker's settlement, driven step by step (no queue) to reach the rare paths. */
let env: TestEnv;
let platform: PlatformChain;

beforeAll(async () => {
  env = await openTestEnv({}, { chain: true });
  platform = await env.app.bootstrapChain();
});
afterAll(async () => {
  await env?.close();
});

const funded = (handle: string, micro: bigint) => fundedAccount(env.app, platform, handle, micro);

const outboxRow = (id: string) =>
  env.app.db.selectFrom('chain_transactions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

async function usdc(owner: string): Promise<bigint> {
  const ata = associatedTokenAccount(platform.usdcMint, new PublicKey(owner));
  const { value } = await env.app.rpc.call<{ value: { amount: string } }>('getTokenAccountBalance', [
    ata.toBase58(),
  ]);
  return BigInt(value.amount);
}

/** `db`, except that reading an outbox row throws: a settlement that reads one fails. */
function blindToOutbox(db: Db): Db {
  return new Proxy(db, {
    get(target, prop) {
      if (prop === 'selectFrom')
        return (table: string) => {
          if (table.startsWith('chain_transactions')) throw new Error('read the outbox row');
          return target.selectFrom(table as 'chain_transactions');
        };
      const value: unknown = Reflect.get(target, prop);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

describe('settlePayment', () => {
  test('a first run sends from the row its commit handed off without reading it; a row settled meanwhile stays as it was', async () => {
    const author = await funded('carried_1', 3_000_000n);
    const post = await commitPost(env.app, author.id, { type: 'post', content: 'carried' });
    const unread = await commitPost(env.app, author.id, { type: 'post', content: 'read' });
    expect(post.signed).toMatchObject({ signature: post.swapTx, lastValidBlockHeight: expect.any(Number) });
    const blind = { ...env.app, db: blindToOutbox(env.app.db) };
    // Without the carried row the settlement must read it (so the blind deps do fail a read).
    await expect(settlePayment(blind, unread.chainTransactionId)).rejects.toThrow('read the outbox row');

    expect(await settlePayment(blind, post.chainTransactionId, { signed: post.signed })).toBe('confirmed');
    const settled = await outboxRow(post.chainTransactionId);
    expect(settled.status).toBe('confirmed');
    expect(await usdc(author.walletAddress)).toBe(2_000_000n);

    // The same carried row again (a stale job): sent again (the chain dedupes), marked nothing.
    expect(await settlePayment(blind, post.chainTransactionId, { signed: post.signed })).toBe('confirmed');
    const again = await outboxRow(post.chainTransactionId);
    expect(again.confirmed_at).toEqual(settled.confirmed_at);
    expect(await usdc(author.walletAddress)).toBe(2_000_000n);
    expect(await settlePayment(env.app, unread.chainTransactionId)).toBe('confirmed');
    expect(await usdc(author.walletAddress)).toBe(1_000_000n);
    expect((await env.app.ledger.money(author.id)).availableMicro).toBe(1_000_000n);
  });

  test('a job carries its signed rows to its first run only', () => {
    const wire = Buffer.from([1, 2, 3]);
    const job = {
      chainTransactionIds: ['a', 'b'],
      signed: {
        a: { movementId: 'm', wire: wire.toString('base64'), signature: 's', lastValidBlockHeight: 7 },
      },
    };
    expect(carriedRowsOf(job, 0)).toEqual(
      new Map([['a', { movementId: 'm', wire, signature: 's', lastValidBlockHeight: 7 }]]),
    );
    expect(carriedRowsOf(job, 1).size).toBe(0);
    expect(carriedRowsOf({ chainTransactionId: 'a' }, 0).size).toBe(0);
  });

  test('an expired blockhash forces a re-sign; swap_tx becomes the landed signature and the post is paid once', async () => {
    const author = await funded('expiry_1', 2_000_000n);
    const post = await commitPost(env.app, author.id, { type: 'post', content: 'late' });
    env.localnet!.chain.warp(151); // the signed transaction can never land now
    expect(await settlePayment(env.app, post.chainTransactionId)).toBe('confirmed');

    const row = await outboxRow(post.chainTransactionId);
    expect(row.status).toBe('confirmed');
    expect(row.attempts).toBe(2);
    expect(row.signature).not.toBe(post.swapTx);
    expect(row.replaced_signatures).toEqual([post.swapTx]); // every attempt is kept
    const [landed, stale] = await env.app.rpc.getSignatureStatuses([row.signature, post.swapTx]);
    expect(landed?.err).toBeNull();
    expect(stale).toBeNull();
    expect(await usdc(author.walletAddress)).toBe(1_000_000n);
    expect((await env.app.ledger.money(author.id)).availableMicro).toBe(1_000_000n);
    // Settling again changes nothing.
    expect(await settlePayment(env.app, post.chainTransactionId)).toBe('confirmed');
    expect(await usdc(author.walletAddress)).toBe(1_000_000n);
  });

  test('a payment that fails on chain reverses its legs: the author gets the dollar back', async () => {
    const author = await funded('failure_1', 1_000_000n);
    const post = await commitPost(env.app, author.id, { type: 'post', content: 'doomed' });
    expect((await env.app.ledger.money(author.id)).availableMicro).toBe(0n);

    // Move the wallet's USDC away behind the ledger's back, so the payment cannot succeed on chain.
    await drainOnChain(env.app, platform, author, 1_000_000n);

    expect(await settlePayment(env.app, post.chainTransactionId)).toBe('failed');
    const row = await outboxRow(post.chainTransactionId);
    expect(row.status).toBe('failed');
    expect(row.error).toMatchObject({ kind: 'program_error' });
    expect(await env.app.ledger.money(author.id)).toEqual({
      availableMicro: 1_000_000n,
      pendingMicro: 0n,
      totalEarnedMicro: 0n,
      totalSpentMicro: 0n,
    });
    // A second settlement (a retried job) does not refund twice.
    expect(await settlePayment(env.app, post.chainTransactionId)).toBe('failed');
    expect((await env.app.ledger.money(author.id)).availableMicro).toBe(1_000_000n);
  });

  test('a failed reply is reversed even after the parent author spent everything spendable: the share was only held', async () => {
    const author = await funded('held_author', 2_000_000n);
    const parent = await commitPost(env.app, author.id, { type: 'post', content: 'parent' });
    expect(await settlePayment(env.app, parent.chainTransactionId)).toBe('confirmed');
    const fan = await funded('held_fan', 1_000_000n);
    const reply = await commitPost(env.app, fan.id, {
      type: 'reply',
      content: 'nice',
      parentId: parent.id,
    });
    expect(await env.app.ledger.money(author.id)).toMatchObject({
      availableMicro: 1_000_000n,
      pendingMicro: 500_000n,
    });
    // The author spends their whole spendable balance; the held half dollar cannot be part of it.
    const spend = await commitPost(env.app, author.id, { type: 'post', content: 'all in' });
    await expect(
      commitPost(env.app, author.id, { type: 'post', content: 'with the held share' }),
    ).rejects.toMatchObject({ code: 'insufficient_balance' });
    expect(await settlePayment(env.app, spend.chainTransactionId)).toBe('confirmed');

    await drainOnChain(env.app, platform, fan, 1_000_000n);
    expect(await settlePayment(env.app, reply.chainTransactionId)).toBe('failed');
    expect(await env.app.ledger.money(author.id)).toEqual({
      availableMicro: 0n,
      pendingMicro: 0n,
      totalEarnedMicro: 0n,
      totalSpentMicro: 2_000_000n,
    });
    expect((await env.app.ledger.money(fan.id)).availableMicro).toBe(1_000_000n);
    expect(await usdc(author.walletAddress)).toBe(0n);
  });
});
