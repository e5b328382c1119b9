import bs58 from 'bs58';
import { randomBytes } from 'node:crypto';
import type { PublicKey } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  associatedTokenAccount,
  buildTransfer,
  ChainError,
  confirmMany,
  createKeystore,
  createRpcClient,
  FaucetRefusedError,
  fundUsdc,
  generateWallet,
  loadPlatformSigners,
  sendAndConfirm,
  signerFromSeed,
  signTransaction,
  USDC_DECIMALS,
  WalletKeyError,
  type PlatformChain,
  type Signer,
} from '../src/adapters/solana/index.js';
import { platformWalletStore } from '../src/adapters/postgres/platform-wallets.repository.js';
import { freePort } from '../src/devstack/free-port.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
let platform: PlatformChain;
let alice: Signer;
let bob: Signer;

beforeAll(async () => {
  env = await openTestEnv({}, { chain: true });
  platform = await env.app.bootstrapChain();
  alice = signerFromSeed(generateWallet().seed);
  bob = signerFromSeed(generateWallet().seed);
  await fundUsdc(env.app.rpc, platform, alice.publicKey.toBase58(), 50_000_000n);
  await fundUsdc(env.app.rpc, platform, bob.publicKey.toBase58(), 1n);
});
afterAll(async () => {
  await env?.close();
});

const usdcBalance = async (owner: PublicKey) =>
  BigInt(
    (
      await env.app.rpc.call<{ value: { amount: string } }>('getTokenAccountBalance', [
        associatedTokenAccount(platform.usdcMint, owner).toBase58(),
      ])
    ).value.amount,
  );

async function signedTransfer(
  from: Signer,
  to: PublicKey,
  amount: bigint,
  memo: string,
  computeUnitPriceMicroLamports?: number,
) {
  const { blockhash, lastValidBlockHeight } = await env.app.rpc.getLatestBlockhash('confirmed');
  const tx = buildTransfer({
    feePayer: platform.signers.fee_payer.publicKey,
    recentBlockhash: blockhash,
    legs: [{ mint: platform.usdcMint, decimals: USDC_DECIMALS, from: from.publicKey, to, amount }],
    memo,
    computeUnitPriceMicroLamports,
  });
  return { ...signTransaction(tx, [platform.signers.fee_payer, from]), lastValidBlockHeight };
}

describe('the chain adapter against the localnet', () => {
  test('a USDC transfer with a memo confirms, moves the exact amount and carries its memo', async () => {
    const [aliceBefore, bobBefore] = [await usdcBalance(alice.publicKey), await usdcBalance(bob.publicKey)];
    const signed = await signedTransfer(alice, bob.publicKey, 1_000_000n, 'post 7f3a');
    const confirmed = await sendAndConfirm(env.app.rpc, signed, { commitment: 'confirmed', pollMs: 50 });
    expect(confirmed.signature).toBe(signed.signature);
    expect(aliceBefore - (await usdcBalance(alice.publicKey))).toBe(1_000_000n);
    expect((await usdcBalance(bob.publicKey)) - bobBefore).toBe(1_000_000n);
    const history = await env.app.rpc.call<Array<{ signature: string; memo: string }>>(
      'getSignaturesForAddress',
      [
        associatedTokenAccount(platform.usdcMint, bob.publicKey).toBase58(),
        { commitment: 'confirmed', limit: 1 },
      ],
    );
    expect(history[0]).toMatchObject({ signature: signed.signature, memo: '[9] post 7f3a' });
  });

  test('a priority fee (compute-unit price) goes first with its price, lands and moves the same money', async () => {
    // The localnet charges signature fees only (src/localnet/chain.ts): what a validator charges
    // for the price is its business; what we can hold is the instruction we send.
    const firstInstruction = async (signature: string) => {
      const tx = await env.app.rpc.call<{
        transaction: {
          message: { accountKeys: string[]; instructions: Array<{ programIdIndex: number; data: string }> };
        };
      }>('getTransaction', [signature, { encoding: 'json', commitment: 'confirmed' }]);
      const { accountKeys, instructions } = tx.transaction.message;
      return {
        program: accountKeys[instructions[0]!.programIdIndex],
        data: bs58.decode(instructions[0]!.data),
      };
    };
    const plain = await signedTransfer(alice, bob.publicKey, 1n, 'plain');
    await sendAndConfirm(env.app.rpc, plain, { commitment: 'confirmed', pollMs: 50 });
    const before = await usdcBalance(bob.publicKey);
    const paying = await signedTransfer(alice, bob.publicKey, 1n, 'priority', 50_000);
    await sendAndConfirm(env.app.rpc, paying, { commitment: 'confirmed', pollMs: 50 });
    expect((await usdcBalance(bob.publicKey)) - before).toBe(1n);
    expect((await firstInstruction(plain.signature)).program).not.toBe(
      'ComputeBudget111111111111111111111111111111',
    );
    const priced = await firstInstruction(paying.signature);
    expect(priced.program).toBe('ComputeBudget111111111111111111111111111111');
    // SetComputeUnitPrice: tag 3, then the price as a little-endian u64.
    expect(priced.data[0]).toBe(3);
    expect(Buffer.from(priced.data).readBigUInt64LE(1)).toBe(50_000n);
  });

  test('confirmMany confirms a batch of transfers, each exactly once', async () => {
    const before = await usdcBalance(bob.publicKey);
    const batch = await Promise.all(
      Array.from({ length: 40 }, (_, i) => signedTransfer(alice, bob.publicKey, 10_000n, `batch ${i}`)),
    );
    const outcomes = await confirmMany(env.app.rpc, batch, {
      commitment: 'confirmed',
      pollMs: 50,
      skipPreflight: true,
    });
    expect(outcomes.filter((o) => o.ok)).toHaveLength(40);
    expect((await usdcBalance(bob.publicKey)) - before).toBe(400_000n);
  });

  test('a transfer above the balance is a permanent program error with logs', async () => {
    const signed = await signedTransfer(bob, alice.publicKey, 10n ** 12n, 'too much');
    const error = await sendAndConfirm(env.app.rpc, signed, { commitment: 'confirmed', pollMs: 50 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ChainError);
    expect(error).toMatchObject({ kind: 'program_error', retryable: false });
    expect((error as ChainError).logs?.join('\n')).toMatch(/Tokenkeg/);
  });

  test('a transaction whose blockhash expired unsent is a retryable blockhash_expired', async () => {
    const before = await usdcBalance(bob.publicKey);
    const signed = await signedTransfer(alice, bob.publicKey, 5n, 'stale');
    env.localnet!.chain.warp(151);
    const error = await sendAndConfirm(env.app.rpc, signed, { commitment: 'confirmed', pollMs: 50 }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ kind: 'blockhash_expired', retryable: true });
    expect(await usdcBalance(bob.publicKey)).toBe(before);
  });

  test('an RPC that does not answer is a retryable rpc_unavailable', async () => {
    const dead = createRpcClient(`http://127.0.0.1:${await freePort()}`, { timeoutMs: 1_000 });
    await expect(dead.getBlockHeight('confirmed')).rejects.toMatchObject({
      kind: 'rpc_unavailable',
      retryable: true,
    });
  });

  test('the faucet refuses a cluster where the platform does not mint (devnet, as the bootstrap finds it)', async () => {
    await expect(
      fundUsdc(
        env.app.rpc,
        { ...platform, cluster: 'devnet', mintsTestTokens: false },
        alice.publicKey.toBase58(),
        1n,
      ),
    ).rejects.toThrow(FaucetRefusedError);
  });

  test('platform keys sealed under one master key do not open under another', async () => {
    const otherKeystore = createKeystore(randomBytes(32));
    await expect(loadPlatformSigners(platformWalletStore(env.app.db), otherKeystore)).rejects.toThrow(
      WalletKeyError,
    );
    await expect(loadPlatformSigners(platformWalletStore(env.app.db), otherKeystore)).rejects.toThrow(
      /WALLET_MASTER_KEY/,
    );
  });
});
