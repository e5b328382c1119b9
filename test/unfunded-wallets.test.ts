import { PublicKey } from '@solana/web3.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  associatedTokenAccount,
  buildTransfer,
  fundUsdc,
  generateWallet,
  sendAndConfirm,
  signerFromSeed,
  signTransaction,
  USDC_DECIMALS,
} from '../src/adapters/solana/index.js';
import { followWallets } from '../src/app/indexer/wallet-follower.js';
import { reconcileRound } from '../src/app/indexer/reconciler.js';
import { onChainNative, onChainUsdc, settledMoney, tokenAccountExists } from './support/balances.js';
import { depositNative } from './support/deposit.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { paymentsSettled } from './support/settled.js';

/**
 * Issue 20, sign-up farming: a sign-up writes nothing on chain (the fee payer used to pay two token
 * accounts' rent per sign-up, before the account row existed). A wallet's token account is
 * created by the transaction that first pays it, and everything downstream (paying from it,
 * reconciliation, deposits from outside) works with accounts created that way.
 */
let h: ServiceHarness;

beforeAll(async () => {
  // Limits off: this file signs up several accounts from one IP (limits have their own tests).
  // No scheduled fund epochs: the fee payer's balance must move only with this file's payments.
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0', CREATOR_FUND_ENABLED: 'false' });
});
afterAll(async () => {
  await h?.close();
});

const ATA_PROGRAM = 'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL';
const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';

const lamports = async (address: PublicKey) =>
  (
    await h.env.app.rpc.call<{ value: number }>('getBalance', [
      address.toBase58(),
      { commitment: 'confirmed' },
    ])
  ).value;

async function tokenAccountsOf(owner: string): Promise<string[]> {
  const { value } = await h.env.app.rpc.call<{ value: Array<{ pubkey: string }> }>(
    'getTokenAccountsByOwner',
    [owner, { programId: TOKEN_PROGRAM }, { encoding: 'base64', commitment: 'confirmed' }],
  );
  return value.map((a) => a.pubkey);
}

interface ChainTransaction {
  meta: { err: unknown; computeUnitsConsumed: number; preBalances: number[]; postBalances: number[] };
  transaction: {
    message: { accountKeys: string[]; instructions: Array<{ programIdIndex: number }> };
  };
}

async function chainTransaction(signature: string): Promise<ChainTransaction> {
  const tx = await h.env.app.rpc.call<ChainTransaction | null>('getTransaction', [
    signature,
    { encoding: 'json', commitment: 'confirmed', maxSupportedTransactionVersion: 0 },
  ]);
  if (!tx) throw new Error(`transaction ${signature} not found`);
  return tx;
}

/** The programs a transaction's instructions call, in order. */
const programsOf = (tx: ChainTransaction) =>
  tx.transaction.message.instructions.map((ix) => tx.transaction.message.accountKeys[ix.programIdIndex]);

/** The swap_tx a payment ended with (a re-sign may have replaced the one first answered). */
async function settledSignature(swapTx: string): Promise<string> {
  await paymentsSettled(h.env.app.db);
  const row = await h.env.app.db
    .selectFrom('chain_transactions')
    .select(['signature', 'status', 'movement_id'])
    .where((eb) =>
      eb.or([eb('signature', '=', swapTx), eb(eb.val(swapTx), '=', eb.fn.any('replaced_signatures'))]),
    )
    .executeTakeFirstOrThrow();
  expect(['confirmed', 'finalized']).toContain(row.status);
  return row.signature;
}

async function signUp(handle: string): Promise<Member> {
  const response = await fetch(`${h.base}/api/v1/accounts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ handle }),
  });
  expect(response.status).toBe(201);
  const body = (await response.json()) as { account: { wallet_address: string }; api_key: string };
  const account = await h.env.app.accounts.byHandle(handle);
  expect(account?.walletAddress).toBe(body.account.wallet_address);
  return { account: account!, key: body.api_key };
}

describe('custodial wallets are opened on chain by their first payment', () => {
  let alice: Member;
  let fresh: Member;

  beforeAll(async () => {
    alice = await h.member('uw_alice', 20_000_000n);
  });

  test('a sign-up costs the fee payer no lamports and creates no token account', async () => {
    await paymentsSettled(h.env.app.db);
    const feePayer = h.platform.signers.fee_payer.publicKey;
    const before = await lamports(feePayer);
    fresh = await signUp('uw_fresh');
    const second = await signUp('uw_fresh_two');
    expect(await lamports(feePayer)).toBe(before);
    expect(await tokenAccountsOf(fresh.account.walletAddress)).toEqual([]);
    expect(await tokenAccountsOf(second.account.walletAddress)).toEqual([]);
  });

  test('a wallet never funded cannot pay: 402 insufficient_balance from the ledger, nothing on chain', async () => {
    const outbox = await h.env.app.db.selectFrom('chain_transactions').select('id').execute();
    const response = await h.call(fresh, 'POST', '/posts', { type: 'post', content: 'free lunch?' });
    expect(response.status).toBe(402);
    expect(await response.json()).toMatchObject({ error: 'insufficient_balance' });
    const send = await h.call(fresh, 'POST', '/send', { to_handle: 'uw_alice', amount_usd: 0.01 });
    expect(send.status).toBe(402);
    expect(await send.json()).toMatchObject({ error: 'insufficient_balance' });
    expect(await h.env.app.db.selectFrom('chain_transactions').select('id').execute()).toHaveLength(
      outbox.length,
    );
  });

  test('the first send to a fresh wallet creates its USDC account in the same transaction; the fee payer pays the rent', async () => {
    const feePayer = h.platform.signers.fee_payer.publicKey;
    const before = await lamports(feePayer);
    const response = await h.call(alice, 'POST', '/send', { to_handle: 'uw_fresh', amount_usd: 3 });
    expect(response.status).toBe(201);
    const signature = await settledSignature(((await response.json()) as { swap_tx: string }).swap_tx);

    const tx = await chainTransaction(signature);
    expect(tx.meta.err).toBeNull();
    expect(programsOf(tx)).toEqual([ATA_PROGRAM, TOKEN_PROGRAM, expect.any(String)]); // create, transfer, memo
    const rentAndFee = before - (await lamports(feePayer));
    // One token account's rent (165 bytes: 2,039,280 lamports) and the 2-signature fee.
    expect(rentAndFee).toBe(2_039_280 + 2 * 5_000);

    const ata = associatedTokenAccount(h.platform.usdcMint, new PublicKey(fresh.account.walletAddress));
    expect(await tokenAccountsOf(fresh.account.walletAddress)).toEqual([ata.toBase58()]);
    expect(await onChainUsdc(h.env.app, h.platform, fresh.account.walletAddress)).toBe(3_000_000n);
    expect((await settledMoney(h.env.app, fresh.account.id)).availableMicro).toBe(3_000_000n);
  });

  test('money that arrived that way can be spent, and a reply pays its author into it', async () => {
    const post = await h.call(fresh, 'POST', '/posts', { type: 'post', content: 'paid for by a friend' });
    expect(post.status).toBe(201);
    const { id: postId } = (await post.json()) as { id: string };
    const reply = await h.call(alice, 'POST', '/posts', {
      type: 'reply',
      content: 'welcome',
      parent_id: postId,
    });
    expect(reply.status).toBe(201);
    const signature = await settledSignature(((await reply.json()) as { swap_tx: string }).swap_tx);
    // The author paid for the post from that account, so it exists: no create in the reply.
    expect(programsOf(await chainTransaction(signature))).not.toContain(ATA_PROGRAM);
    expect(await onChainUsdc(h.env.app, h.platform, fresh.account.walletAddress)).toBe(2_500_000n);
  });

  test('the reconciler matches payments that created an account (no pre-balance = 0)', async () => {
    await paymentsSettled(h.env.app.db);
    await reconcileRound(h.env.app, { missingAfterMs: 600_000, finalizedRecheckMs: 0, limit: 1_000 });
    const result = await h.env.app.clickhouse.client.query({
      query: `SELECT status, count() AS n FROM ${h.env.app.clickhouse.table('reconciliation')} FINAL GROUP BY status`,
      format: 'JSONEachRow',
    });
    const rows = await result.json<{ status: string; n: string }>();
    expect(rows.filter((r) => r.status !== 'matched')).toEqual([]);
    expect(Number(rows.find((r) => r.status === 'matched')?.n)).toBeGreaterThanOrEqual(3);
  });

  test('a second send to the same wallet keeps the idempotent create and costs no rent', async () => {
    const feePayer = h.platform.signers.fee_payer.publicKey;
    const before = await lamports(feePayer);
    const response = await h.call(alice, 'POST', '/send', { to_handle: 'uw_fresh', amount_usd: 1 });
    expect(response.status).toBe(201);
    const signature = await settledSignature(((await response.json()) as { swap_tx: string }).swap_tx);
    const tx = await chainTransaction(signature);
    expect(programsOf(tx)[0]).toBe(ATA_PROGRAM);
    expect(before - (await lamports(feePayer))).toBe(2 * 5_000);
  });

  test('a swap by a wallet holding only native tokens creates its USDC account', async () => {
    const seller = await signUp('uw_native_only');
    await depositNative(h.env.app, h.platform, seller.account, 50n * 10n ** 9n);
    expect(
      await tokenAccountExists(
        h.env.app,
        associatedTokenAccount(h.platform.usdcMint, new PublicKey(seller.account.walletAddress)),
      ),
    ).toBe(false);
    const response = await h.call(seller, 'POST', '/swap-to-usdc', {
      amount_tokens: String(10n * 10n ** 9n),
    });
    expect(response.status).toBe(201);
    await settledSignature(((await response.json()) as { swap_tx: string }).swap_tx);
    expect(await onChainNative(h.env.app, h.platform, seller.account.walletAddress)).toBe(40n * 10n ** 9n);
    const usdc = await onChainUsdc(h.env.app, h.platform, seller.account.walletAddress);
    expect(usdc).toBeGreaterThan(0n);
    expect((await settledMoney(h.env.app, seller.account.id)).availableMicro).toBe(usdc);
  });

  test('a deposit from outside whose transaction creates the token account is credited once', async () => {
    const user = await signUp('uw_depositee');
    // An outside wallet holding USDC pays the deposit, its own fee and the new account's rent.
    const outsider = signerFromSeed(generateWallet().seed);
    await h.env.app.rpc.call('requestAirdrop', [outsider.publicKey.toBase58(), 1_000_000_000]);
    await fundUsdc(h.env.app.rpc, h.platform, outsider.publicKey.toBase58(), 4_000_000n);
    for (let k = 0; (await lamports(outsider.publicKey)) === 0; k++) {
      if (k > 200) throw new Error('airdrop never landed');
      await sleep(50);
    }
    const { blockhash, lastValidBlockHeight } = await h.env.app.rpc.getLatestBlockhash('confirmed');
    const tx = buildTransfer({
      feePayer: outsider.publicKey,
      recentBlockhash: blockhash,
      legs: [
        {
          mint: h.platform.usdcMint,
          decimals: USDC_DECIMALS,
          from: outsider.publicKey,
          to: new PublicKey(user.account.walletAddress),
          amount: 1_500_000n,
          createRecipientAta: true,
        },
      ],
    });
    const signed = signTransaction(tx, [outsider]);
    await sendAndConfirm(h.env.app.rpc, { ...signed, lastValidBlockHeight }, { commitment: 'confirmed' });

    expect((await followWallets(h.env.app)).deposits).toBe(1);
    expect((await followWallets(h.env.app)).deposits).toBe(0);
    expect((await settledMoney(h.env.app, user.account.id)).availableMicro).toBe(1_500_000n);
  });
});
