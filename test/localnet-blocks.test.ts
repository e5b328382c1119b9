import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as spl from '@solana/spl-token';
import type { PublicKey } from '@solana/web3.js';
import {
  Connection,
  Keypair,
  LAMPORTS_PER_SOL,
  SolanaJSONRPCError,
  SystemProgram,
  Transaction,
  type Finality,
  type TransactionInstruction,
  type Signer,
  type VersionedAccountsModeBlockResponse,
  type VersionedBlockResponse,
  type VersionedNoneModeBlockResponse,
} from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startLocalnet, type Localnet, type LocalnetOptions } from '../src/localnet/localnet.js';

/*
 * The localnet has blocks (issue 52 item 1), read through web3.js's Connection as a block
 * follower would. The clock is stopped (an hour per slot) and moved by warp, so nothing here
 * depends on timing: in memory a block is confirmed one slot after it, finalized 32 after.
 */
const STOPPED = 3_600_000;

const nets: Localnet[] = [];
const folders: string[] = [];
afterAll(async () => {
  for (const net of nets) await net.close();
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

async function start(options: Partial<LocalnetOptions> = {}): Promise<Localnet> {
  const net = await startLocalnet({ port: 0, slotMs: STOPPED, ...options });
  nets.push(net);
  return net;
}

async function rpc<T>(net: Localnet, method: string, params: unknown[]): Promise<T> {
  const response = await fetch(net.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await response.json()) as { result?: T; error?: { code: number; message: string } };
  if (body.error) throw new SolanaJSONRPCError(body.error, method);
  return body.result as T;
}

async function codeOf(promise: Promise<unknown>): Promise<number | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return (error as SolanaJSONRPCError).code as number;
  }
}

/** A block's header through web3.js (transactionDetails none). */
async function header(c: Connection, slot: number, commitment?: Finality) {
  const block = await c.getBlock(slot, {
    maxSupportedTransactionVersion: 0,
    transactionDetails: 'none',
    rewards: false,
    commitment,
  });
  // web3.js parses and keeps blockHeight; its type leaves it out.
  return block as unknown as VersionedNoneModeBlockResponse & { blockHeight: number | null };
}

async function fullBlock(c: Connection, slot: number) {
  const block = await c.getBlock(slot, {
    maxSupportedTransactionVersion: 0,
    transactionDetails: 'full',
    rewards: false,
  });
  return block as VersionedBlockResponse;
}

async function accountsBlock(c: Connection, slot: number) {
  const block = await c.getBlock(slot, {
    maxSupportedTransactionVersion: 0,
    transactionDetails: 'accounts',
    rewards: false,
  });
  return block as unknown as VersionedAccountsModeBlockResponse;
}

/** Signs and sends; the localnet executes it before it answers (processed at once). */
async function send(connection: Connection, instructions: TransactionInstruction[], signers: Signer[]) {
  const { blockhash } = await connection.getLatestBlockhash('processed');
  const tx = new Transaction({ feePayer: signers[0]!.publicKey, recentBlockhash: blockhash }).add(
    ...instructions,
  );
  tx.sign(...signers);
  return connection.sendRawTransaction(tx.serialize(), { preflightCommitment: 'processed' });
}

/** A 6-decimal mint (our test USDC), alice's ATA with 100 USDC and bob's empty one. */
async function usdc(net: Localnet, connection: Connection) {
  const payer = Keypair.generate();
  await rpc(net, 'requestAirdrop', [payer.publicKey.toBase58(), 10 * LAMPORTS_PER_SOL]);
  const mint = Keypair.generate();
  const alice = Keypair.generate();
  const bob = Keypair.generate();
  const aliceAta = spl.getAssociatedTokenAddressSync(mint.publicKey, alice.publicKey);
  const bobAta = spl.getAssociatedTokenAddressSync(mint.publicKey, bob.publicKey);
  const rent = await connection.getMinimumBalanceForRentExemption(spl.MINT_SIZE);
  await send(
    connection,
    [
      SystemProgram.createAccount({
        fromPubkey: payer.publicKey,
        newAccountPubkey: mint.publicKey,
        lamports: rent,
        space: spl.MINT_SIZE,
        programId: spl.TOKEN_PROGRAM_ID,
      }),
      spl.createInitializeMint2Instruction(mint.publicKey, 6, payer.publicKey, null),
      spl.createAssociatedTokenAccountInstruction(payer.publicKey, aliceAta, alice.publicKey, mint.publicKey),
      spl.createAssociatedTokenAccountInstruction(payer.publicKey, bobAta, bob.publicKey, mint.publicKey),
      spl.createMintToCheckedInstruction(mint.publicKey, aliceAta, payer.publicKey, 100_000_000n, 6),
    ],
    [payer, mint],
  );
  const transfer = (amount: bigint) =>
    send(
      connection,
      [spl.createTransferCheckedInstruction(aliceAta, mint.publicKey, bobAta, alice.publicKey, amount, 6)],
      [payer, alice],
    );
  return { payer, mint: mint.publicKey, alice, bob, aliceAta, bobAta, transfer };
}

describe('localnet blocks', () => {
  let net: Localnet;
  let connection: Connection;
  beforeAll(async () => {
    net = await start();
    connection = new Connection(net.rpcUrl, 'confirmed');
  });

  test('each slot is a block chained to its parent by slot and blockhash; slot and height lag by commitment', async () => {
    net.chain.warp(40);
    const processed = await connection.getSlot('processed');
    expect(await connection.getSlot('confirmed')).toBe(processed - 1);
    expect(await connection.getSlot('finalized')).toBe(processed - 32);
    expect(await connection.getSlot()).toBe(processed - 1); // the Connection's own commitment
    expect(await connection.getBlockHeight('processed')).toBe(processed); // no slot skipped yet
    expect(await connection.getBlockHeight('finalized')).toBe(processed - 32);

    const slots = await connection.getBlocks(processed - 10);
    expect(slots).toEqual(Array.from({ length: 10 }, (_, i) => processed - 10 + i));
    let parent = await header(connection, slots[0]!);
    for (const slot of slots.slice(1)) {
      const block = await header(connection, slot);
      expect(block.parentSlot).toBe(slot - 1);
      expect(block.previousBlockhash).toBe(parent.blockhash);
      expect(block.blockHeight).toBe(parent.blockHeight! + 1);
      expect(block.blockTime).toBeTypeOf('number');
      expect(block.blockhash).not.toBe(parent.blockhash);
      parent = block;
    }
    // The newest block's hash is the blockhash transactions are signed with.
    const newest = await rpc<{ blockhash: string }>(net, 'getBlock', [
      processed,
      { commitment: 'confirmed', transactionDetails: 'none' },
    ]).catch((error: SolanaJSONRPCError) => error);
    expect((newest as SolanaJSONRPCError).code).toBe(-32004); // processed only
    net.chain.warp(1);
    const block = await header(connection, processed);
    const latest = await rpc<{ value: { blockhash: string } }>(net, 'getLatestBlockhash', []);
    expect(latest.value.blockhash).not.toBe(block.blockhash);
    const queue = await rpc<{ value: boolean }>(net, 'isBlockhashValid', [block.blockhash]);
    expect(queue.value).toBe(true);
  });

  test("a USDC transfer's block shows it with its token balances at every level of detail", async () => {
    const coin = await usdc(net, connection);
    const signature = await coin.transfer(2_500_000n);
    const slot = await connection.getSlot('processed');
    expect(await codeOf(fullBlock(connection, slot))).toBe(-32004);
    net.chain.warp(1);

    const full = await fullBlock(connection, slot);
    const tx = full.transactions.find((entry) => entry.transaction.signatures[0] === signature)!;
    expect(tx).toBeDefined();
    expect(tx.version).toBe('legacy');
    expect(full.rewards).toBeUndefined();
    const keys = tx.transaction.message.staticAccountKeys.map((key) => key.toBase58());
    const balance = (
      balances: Array<{
        accountIndex: number;
        mint: string;
        owner?: string;
        programId?: string;
        uiTokenAmount: { amount: string };
      }>,
      ata: PublicKey,
    ) => balances.find((entry) => keys[entry.accountIndex] === ata.toBase58());
    const expectBalances = (meta: {
      preTokenBalances?: Parameters<typeof balance>[0] | null;
      postTokenBalances?: Parameters<typeof balance>[0] | null;
    }) => {
      expect(balance(meta.preTokenBalances!, coin.aliceAta)).toEqual({
        accountIndex: keys.indexOf(coin.aliceAta.toBase58()),
        mint: coin.mint.toBase58(),
        owner: coin.alice.publicKey.toBase58(),
        programId: spl.TOKEN_PROGRAM_ID.toBase58(),
        uiTokenAmount: { amount: '100000000', decimals: 6, uiAmount: 100, uiAmountString: '100' },
      });
      expect(balance(meta.postTokenBalances!, coin.aliceAta)?.uiTokenAmount).toEqual({
        amount: '97500000',
        decimals: 6,
        uiAmount: 97.5,
        uiAmountString: '97.5',
      });
      expect(balance(meta.preTokenBalances!, coin.bobAta)?.uiTokenAmount.amount).toBe('0');
      expect(balance(meta.postTokenBalances!, coin.bobAta)).toMatchObject({
        owner: coin.bob.publicKey.toBase58(),
        uiTokenAmount: { amount: '2500000', uiAmountString: '2.5' },
      });
    };
    expectBalances(tx.meta!);
    expect(tx.meta!.logMessages?.length).toBeGreaterThan(0);

    const accounts = await accountsBlock(connection, slot);
    const listed = accounts.transactions.find((entry) => entry.transaction.signatures[0] === signature)!;
    expect(listed.transaction.accountKeys.map((key) => key.pubkey.toBase58())).toEqual(keys);
    expect(listed.transaction.accountKeys[0]).toMatchObject({ signer: true, writable: true });
    expectBalances(listed.meta!);
    expect(listed.meta!.logMessages).toBeUndefined();

    const signatures = await connection.getBlockSignatures(slot);
    expect(signatures.signatures).toContain(signature);
    expect(signatures.blockhash).toBe(full.blockhash);
    expect(signatures.parentSlot).toBe(full.parentSlot);
  });

  test('getBlocks and getBlocksWithLimit leave out skipped slots; the block after a gap names the one before it', async () => {
    await rpc(net, 'localnet_blockFaults', [{ skipSlots: 3 }]);
    const before = await connection.getSlot('processed');
    net.chain.warp(2);
    const after = await connection.getSlot('processed');
    expect(after).toBe(before + 5);
    net.chain.warp(1);

    expect(await connection.getBlocks(before, after)).toEqual([before, before + 4, before + 5]);
    expect(await rpc(net, 'getBlocksWithLimit', [before, 2, { commitment: 'confirmed' }])).toEqual([
      before,
      before + 4,
    ]);
    expect(await codeOf(header(connection, before + 1))).toBe(-32007);
    const previous = await header(connection, before);
    const next = await header(connection, before + 4);
    expect(next.parentSlot).toBe(before);
    expect(next.previousBlockhash).toBe(previous.blockhash);
    expect(next.blockHeight).toBe(previous.blockHeight! + 1);
    expect(await connection.getBlockHeight('processed')).toBe(next.blockHeight! + 2);
  });

  test('a block answers -32004 to its first reads, then itself', async () => {
    net.chain.warp(2);
    const slot = (await connection.getSlot('confirmed')) - 0;
    await rpc(net, 'localnet_blockFaults', [{ unavailableReads: 2 }]);
    try {
      expect(await codeOf(header(connection, slot))).toBe(-32004);
      expect(await codeOf(header(connection, slot))).toBe(-32004);
      const block = await header(connection, slot);
      expect(block.parentSlot).toBeLessThan(slot);
      // Another block has its own count.
      expect(await codeOf(header(connection, slot - 1))).toBe(-32004);
    } finally {
      await rpc(net, 'localnet_blockFaults', [{ unavailableReads: 0 }]);
    }
  });

  test('pruning moves the first available block up; older blocks answer -32001', async () => {
    expect(await connection.getFirstAvailableBlock()).toBe(0);
    await header(connection, 5);
    await rpc(net, 'localnet_blockFaults', [{ pruneBelow: 10 }]);
    expect(await connection.getFirstAvailableBlock()).toBe(10);
    const error = await header(connection, 5).catch((e: SolanaJSONRPCError) => e);
    expect((error as SolanaJSONRPCError).code).toBe(-32001);
    expect((error as SolanaJSONRPCError).message).toMatch(/Block 5 cleaned up.*First available block: 10/);
    expect((await connection.getBlocks(0, 12)).slice(0, 3)).toEqual([10, 11, 12]);
    // Only finalized history can be pruned.
    const processed = await connection.getSlot('processed');
    expect(await codeOf(rpc(net, 'localnet_blockFaults', [{ pruneBelow: processed }]))).toBe(-32602);
  });
});

describe('localnet forks', () => {
  test('a fork drops the newest unfinalized blocks with their transactions and replaces them on a new branch', async () => {
    const net = await start();
    const connection = new Connection(net.rpcUrl, 'confirmed');
    const coin = await usdc(net, connection);
    net.chain.warp(1);
    const signature = await coin.transfer(1_000_000n);
    const landed = await connection.getSlot('processed');
    net.chain.warp(3);
    expect((await connection.getTransaction(signature, { maxSupportedTransactionVersion: 0 }))?.slot).toBe(
      landed,
    );
    expect((await connection.getTokenAccountBalance(coin.bobAta, 'confirmed')).value.amount).toBe('1000000');
    const old = await Promise.all(
      [landed - 1, landed, landed + 1, landed + 2].map((slot) => connection.getBlockSignatures(slot)),
    );
    expect(old[1]!.signatures).toEqual([signature]);

    // The newest four blocks: landed .. landed + 3 (landed + 3 is processed only).
    const answer = await rpc<{ forkedAfter: number }>(net, 'localnet_blockFaults', [{ fork: 4 }]);
    expect(answer.forkedAfter).toBe(landed - 1);
    net.chain.warp(1);

    expect(await connection.getTransaction(signature, { maxSupportedTransactionVersion: 0 })).toBeNull();
    expect((await connection.getSignatureStatus(signature)).value).toBeNull();
    expect((await connection.getTokenAccountBalance(coin.bobAta, 'processed')).value.amount).toBe('0');
    const kept = await connection.getBlockSignatures(landed - 1);
    expect(kept.blockhash).toBe(old[0]!.blockhash);
    let parent = kept;
    for (const slot of [landed, landed + 1, landed + 2, landed + 3]) {
      const block = await connection.getBlockSignatures(slot);
      expect(block.signatures).toEqual([]);
      expect(block.parentSlot).toBe(parent === kept ? landed - 1 : slot - 1);
      expect(block.previousBlockhash).toBe(parent.blockhash);
      expect(old.map((b) => b.blockhash)).not.toContain(block.blockhash);
      parent = block;
    }
    // The dropped blockhash is gone; the same transfer can land anew on the new branch, once.
    expect((await rpc<{ value: boolean }>(net, 'isBlockhashValid', [old[1]!.blockhash])).value).toBe(false);
    const again = await coin.transfer(1_000_000n);
    expect((await connection.getTokenAccountBalance(coin.bobAta, 'processed')).value.amount).toBe('1000000');
    expect(again).not.toBe(signature);

    // Finalized blocks are never dropped.
    expect(await codeOf(rpc(net, 'localnet_blockFaults', [{ fork: 40 }]))).toBe(-32602);
  });

  test('raised commitment lags: confirmed and finalized follow the settings', async () => {
    const net = await start({ confirmationSlots: 4, finalizationSlots: 10 });
    const connection = new Connection(net.rpcUrl, 'confirmed');
    net.chain.warp(20);
    expect(await connection.getSlot('confirmed')).toBe(16);
    expect(await connection.getSlot('finalized')).toBe(10);
    const owner = Keypair.generate().publicKey;
    const signature = await connection.requestAirdrop(owner, LAMPORTS_PER_SOL);
    net.chain.warp(3);
    expect((await connection.getSignatureStatus(signature)).value?.confirmationStatus).toBe('processed');
    net.chain.warp(1);
    expect((await connection.getSignatureStatus(signature)).value?.confirmationStatus).toBe('confirmed');
  });
});

describe('localnet blocks on disk', () => {
  test('blocks, skipped slots, forks and pruning survive a restart from the journal', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'ledgerfeed-blocks-'));
    folders.push(dir);
    let net = await startLocalnet({ dir, port: 0, slotMs: STOPPED });
    let connection = new Connection(net.rpcUrl, 'confirmed');
    const owner = Keypair.generate().publicKey;
    net.chain.warp(3);
    const kept = await connection.requestAirdrop(owner, LAMPORTS_PER_SOL);
    const keptSlot = await connection.getSlot('processed');
    net.chain.warp(2);
    await rpc(net, 'localnet_blockFaults', [{ skipSlots: 2 }]);
    net.chain.warp(38);
    const dropped = await connection.requestAirdrop(owner, 2 * LAMPORTS_PER_SOL);
    net.chain.warp(2);
    await net.chain.persist();
    await rpc(net, 'localnet_blockFaults', [{ fork: 3, pruneBelow: 2 }]);
    net.chain.warp(2);
    await net.chain.persist();
    net.chain.warp(1);

    const last = await connection.getSlot('confirmed');
    const slots = await connection.getBlocks(0, last);
    expect(slots).not.toContain(keptSlot + 3);
    expect(slots[0]).toBe(2);
    const read = (c: Connection) => Promise.all(slots.map((slot) => c.getBlockSignatures(slot)));
    const before = await read(connection);
    expect(before.flatMap((block) => block.signatures)).toContain(kept);
    expect(before.flatMap((block) => block.signatures)).not.toContain(dropped);
    await net.close();

    net = await startLocalnet({ dir, port: 0, slotMs: STOPPED });
    nets.push(net);
    connection = new Connection(net.rpcUrl, 'confirmed');
    expect(await connection.getFirstAvailableBlock()).toBe(2);
    expect(await connection.getBlocks(0, last)).toEqual(slots);
    expect(await read(connection)).toEqual(before);
    expect(await connection.getTransaction(dropped)).toBeNull();
    expect(await connection.getBalance(owner, 'processed')).toBe(LAMPORTS_PER_SOL);

    // The chain goes on from the last block, on a new seed.
    const newest = await connection.getSlot('processed');
    net.chain.warp(2);
    await net.chain.persist(); // the new seed's journal line: blocks on it are confirmed once it is on disk
    const next = await header(connection, newest + 1);
    const parent = await header(connection, newest);
    expect(next.parentSlot).toBe(newest);
    expect(next.previousBlockhash).toBe(parent.blockhash);
  });
});
