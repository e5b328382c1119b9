import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  Connection,
  Keypair,
  LAMPORTS_PER_SOL,
  PublicKey,
  SendTransactionError,
  sendAndConfirmTransaction,
  Transaction,
  TransactionInstruction,
  TransactionMessage,
  VersionedTransaction,
  type Signer,
} from '@solana/web3.js';
import * as spl from '@solana/spl-token';
import bs58 from 'bs58';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startLocalnet, type Localnet } from '../src/localnet/localnet.js';

const MEMO = new PublicKey('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');
const memo = (text: string) =>
  new TransactionInstruction({ programId: MEMO, keys: [], data: Buffer.from(text) });

let net: Localnet;
let connection: Connection;
let payer: Keypair;
let mint: PublicKey;
const alice = Keypair.generate();
const bob = Keypair.generate();
let aliceAta: PublicKey;
let bobAta: PublicKey;

async function rpc(body: unknown): Promise<unknown> {
  const response = await fetch(net.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return response.json();
}

async function signed(instructions: TransactionInstruction[], signers: Signer[]): Promise<Transaction> {
  const { blockhash } = await connection.getLatestBlockhash();
  const tx = new Transaction({ feePayer: signers[0]!.publicKey, recentBlockhash: blockhash }).add(
    ...instructions,
  );
  tx.sign(...signers);
  return tx;
}

beforeAll(async () => {
  net = await startLocalnet({ port: 0, slotMs: 100 });
  connection = new Connection(net.rpcUrl, 'confirmed');
  payer = Keypair.generate();
  await connection.confirmTransaction(
    await connection.requestAirdrop(payer.publicKey, 100 * LAMPORTS_PER_SOL),
    'confirmed',
  );
  mint = await spl.createMint(connection, payer, payer.publicKey, null, 6);
  aliceAta = (await spl.getOrCreateAssociatedTokenAccount(connection, payer, mint, alice.publicKey)).address;
  bobAta = (await spl.getOrCreateAssociatedTokenAccount(connection, payer, mint, bob.publicKey)).address;
  await spl.mintToChecked(connection, payer, mint, aliceAta, payer, 100_000_000n, 6);
});

afterAll(async () => {
  await new Promise((resolve) => setTimeout(resolve, 600)); // let web3.js close its idle WebSocket
  await net?.close();
});

describe('the localnet through web3.js and spl-token', () => {
  test('createMint, ATA creation and mintTo land; the mint and balance read back', async () => {
    const mintInfo = await spl.getMint(connection, mint);
    expect(mintInfo.decimals).toBe(6);
    expect(mintInfo.supply).toBe(100_000_000n);
    expect((await spl.getAccount(connection, aliceAta)).amount).toBe(100_000_000n);
    expect((await connection.getTokenAccountBalance(aliceAta)).value.uiAmountString).toBe('100');
  });

  test('a transfer with a memo confirms over the WebSocket, and getTransaction shows exact token balances', async () => {
    const before = (await spl.getAccount(connection, bobAta)).amount;
    const tx = new Transaction().add(
      spl.createTransferCheckedInstruction(aliceAta, mint, bobAta, alice.publicKey, 2_500_000n, 6),
      memo('post 42'),
    );
    const signature = await sendAndConfirmTransaction(connection, tx, [payer, alice], {
      commitment: 'confirmed',
    });

    const fetched = await connection.getTransaction(signature, {
      commitment: 'confirmed',
      maxSupportedTransactionVersion: 0,
    });
    expect(fetched?.meta?.err).toBeNull();
    expect(fetched?.meta?.fee).toBe(10_000); // two signatures
    const amount = (
      balances: Array<{ owner?: string; uiTokenAmount: { amount: string } }>,
      owner: PublicKey,
    ) => BigInt(balances.find((b) => b.owner === owner.toBase58())?.uiTokenAmount.amount ?? '0');
    const pre = fetched!.meta!.preTokenBalances!;
    const post = fetched!.meta!.postTokenBalances!;
    expect(amount(pre, alice.publicKey) - amount(post, alice.publicKey)).toBe(2_500_000n);
    expect(amount(post, bob.publicKey) - amount(pre, bob.publicKey)).toBe(2_500_000n);
    expect(fetched!.meta!.preBalances[0]! - fetched!.meta!.postBalances[0]!).toBe(10_000);
    expect((await spl.getAccount(connection, bobAta)).amount - before).toBe(2_500_000n);

    const parsed = await connection.getParsedTransaction(signature, {
      commitment: 'confirmed',
      maxSupportedTransactionVersion: 0,
    });
    const instructions = parsed!.transaction.message.instructions as Array<{
      program?: string;
      parsed?: unknown;
    }>;
    expect(instructions[0]).toMatchObject({
      program: 'spl-token',
      parsed: {
        type: 'transferChecked',
        info: { source: aliceAta.toBase58(), tokenAmount: { amount: '2500000' } },
      },
    });
    expect(instructions[1]).toMatchObject({ program: 'spl-memo', parsed: 'post 42' });
  });

  test('a failing transfer is refused with its error and logs, and moves nothing, not even its fee', async () => {
    const before = (await spl.getAccount(connection, aliceAta)).amount;
    const lamportsBefore = await connection.getBalance(payer.publicKey);
    const tx = await signed(
      [spl.createTransferCheckedInstruction(aliceAta, mint, bobAta, alice.publicKey, 10n ** 12n, 6)],
      [payer, alice],
    );
    const error = await connection.sendRawTransaction(tx.serialize()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SendTransactionError);
    expect((error as SendTransactionError).message).toMatch(/custom program error: 0x1/);
    expect((error as SendTransactionError).logs?.join('\n')).toMatch(/Tokenkeg/);
    expect((await spl.getAccount(connection, aliceAta)).amount).toBe(before);
    expect(await connection.getBalance(payer.publicKey)).toBe(lamportsBefore);
    const signature = bs58.encode(tx.signatures[0]!.signature!);
    expect((await connection.getSignatureStatuses([signature])).value[0]).toBeNull();
    // Nothing remembers the refused bytes: sent again without preflight, they land (and fail).
    await connection.sendRawTransaction(tx.serialize(), { skipPreflight: true });
    expect((await waitForStatus(signature))?.err).toEqual({ InstructionError: [0, { Custom: 1 }] });
    expect(lamportsBefore - (await connection.getBalance(payer.publicKey))).toBe(10_000);
  });

  test('without preflight a failing transaction lands with its error and still pays its fee', async () => {
    const lamportsBefore = await connection.getBalance(payer.publicKey);
    const tx = await signed(
      [spl.createTransferCheckedInstruction(aliceAta, mint, bobAta, alice.publicKey, 10n ** 12n, 6)],
      [payer, alice],
    );
    const signature = await connection.sendRawTransaction(tx.serialize(), { skipPreflight: true });
    const status = await waitForStatus(signature);
    expect(status?.err).toEqual({ InstructionError: [0, { Custom: 1 }] });
    expect(lamportsBefore - (await connection.getBalance(payer.publicKey))).toBe(10_000);
    const fetched = await connection.getTransaction(signature, { commitment: 'confirmed' });
    expect(fetched?.meta?.err).toEqual({ InstructionError: [0, { Custom: 1 }] });
    expect(fetched?.meta?.logMessages?.length).toBeGreaterThan(0);
  });

  test('a blockhash older than 150 blocks is refused with the validator error', async () => {
    const tx = await signed([memo('late')], [payer]);
    net.chain.warp(151);
    expect((await connection.isBlockhashValid(tx.recentBlockhash!)).value).toBe(false);
    await expect(connection.sendRawTransaction(tx.serialize())).rejects.toThrow(/Blockhash not found/);
    // Without preflight it is accepted and dropped: it never lands.
    const signature = await connection.sendRawTransaction(tx.serialize(), { skipPreflight: true });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await connection.getSignatureStatuses([signature])).value[0]).toBeNull();
    // web3.js caches a blockhash for 30 s, less than 150 real slots but more than this warp.
    connection = new Connection(net.rpcUrl, 'confirmed');
  });

  test('sending the same transaction twice executes it once', async () => {
    const before = (await spl.getAccount(connection, bobAta)).amount;
    const tx = await signed(
      [spl.createTransferCheckedInstruction(aliceAta, mint, bobAta, alice.publicKey, 1_000_000n, 6)],
      [payer, alice],
    );
    const first = await connection.sendRawTransaction(tx.serialize(), { skipPreflight: true });
    const second = await connection.sendRawTransaction(tx.serialize(), { skipPreflight: true });
    expect(second).toBe(first);
    await expect(connection.sendRawTransaction(tx.serialize())).rejects.toThrow(
      /This transaction has already been processed/,
    );
    await waitForStatus(first);
    expect((await spl.getAccount(connection, bobAta)).amount - before).toBe(1_000_000n);
  });

  test('getSignaturesForAddress pages newest first with before and until', async () => {
    const owner = Keypair.generate();
    const signatures: string[] = [];
    for (let i = 0; i < 5; i++) {
      const tx = await signed(
        [memo(`page ${i}`), transferTo(owner.publicKey, LAMPORTS_PER_SOL + i)],
        [payer],
      );
      signatures.push(await connection.sendRawTransaction(tx.serialize()));
    }
    await waitForStatus(signatures[4]!);
    const newestFirst = [...signatures].reverse();
    const all = await connection.getSignaturesForAddress(owner.publicKey, {}, 'confirmed');
    expect(all.map((s) => s.signature)).toEqual(newestFirst);
    expect(all[0]!.memo).toBe('[6] page 4');
    const firstPage = await connection.getSignaturesForAddress(owner.publicKey, { limit: 2 }, 'confirmed');
    expect(firstPage.map((s) => s.signature)).toEqual(newestFirst.slice(0, 2));
    const secondPage = await connection.getSignaturesForAddress(
      owner.publicKey,
      { limit: 2, before: firstPage[1]!.signature },
      'confirmed',
    );
    expect(secondPage.map((s) => s.signature)).toEqual(newestFirst.slice(2, 4));
    const untilPage = await connection.getSignaturesForAddress(
      owner.publicKey,
      { until: signatures[1] },
      'confirmed',
    );
    expect(untilPage.map((s) => s.signature)).toEqual(newestFirst.slice(0, 3));
  });

  test('a v0 transaction is served only to clients that accept version 0', async () => {
    const { blockhash } = await connection.getLatestBlockhash();
    const message = new TransactionMessage({
      payerKey: payer.publicKey,
      recentBlockhash: blockhash,
      instructions: [memo('v0')],
    }).compileToV0Message();
    const tx = new VersionedTransaction(message);
    tx.sign([payer]);
    const signature = await connection.sendTransaction(tx);
    await waitForStatus(signature);
    await expect(connection.getTransaction(signature, { commitment: 'confirmed' } as never)).rejects.toThrow(
      /maxSupportedTransactionVersion/,
    );
    const fetched = await connection.getTransaction(signature, {
      commitment: 'confirmed',
      maxSupportedTransactionVersion: 0,
    });
    expect(fetched?.version).toBe(0);
  });

  test('token accounts are found by owner and read in parsed form', async () => {
    const byMint = await connection.getParsedTokenAccountsByOwner(alice.publicKey, { mint });
    expect(byMint.value.map((a) => a.pubkey.toBase58())).toEqual([aliceAta.toBase58()]);
    const info = byMint.value[0]!.account.data.parsed as {
      type: string;
      info: { owner: string; mint: string };
    };
    expect(info).toMatchObject({
      type: 'account',
      info: { owner: alice.publicKey.toBase58(), mint: mint.toBase58() },
    });
    const byProgram = await connection.getTokenAccountsByOwner(bob.publicKey, {
      programId: spl.TOKEN_PROGRAM_ID,
    });
    expect(byProgram.value.map((a) => a.pubkey.toBase58())).toEqual([bobAta.toBase58()]);
    const many = await connection.getMultipleAccountsInfo([aliceAta, Keypair.generate().publicKey]);
    expect(many[0]?.owner.toBase58()).toBe(spl.TOKEN_PROGRAM_ID.toBase58());
    expect(many[1]).toBeNull();
  });

  test('slot notifications arrive over the WebSocket', async () => {
    const slots: number[] = [];
    const id = connection.onSlotChange((info) => slots.push(info.slot));
    while (slots.length < 2) await new Promise((resolve) => setTimeout(resolve, 50));
    await connection.removeSlotChangeListener(id);
    expect(slots[1]).toBe(slots[0]! + 1);
  });

  test('creating an associated token account leaves the FPU state clean', async () => {
    const owner = Keypair.generate();
    await spl.getOrCreateAssociatedTokenAccount(connection, payer, mint, owner.publicKey);
    const minusZero = -0;
    expect(Object.is(minusZero % 64, -0)).toBe(true);
    expect(Object.is(-0 % 64, -0)).toBe(true);
  });
});

describe('JSON-RPC surface', () => {
  test('answers batches in order, with standard errors for unknown methods and bad params', async () => {
    const answers = (await rpc([
      { jsonrpc: '2.0', id: 1, method: 'getHealth' },
      { jsonrpc: '2.0', id: 2, method: 'noSuchMethod' },
      { jsonrpc: '2.0', id: 3, method: 'getBalance', params: ['not-an-address'] },
      { jsonrpc: '2.0', id: 4, method: 'sendTransaction', params: ['AQID', { encoding: 'base64' }] },
    ])) as Array<{ id: number; result?: unknown; error?: { code: number } }>;
    expect(answers.map((a) => a.id)).toEqual([1, 2, 3, 4]);
    expect(answers[0]!.result).toBe('ok');
    expect(answers[1]!.error?.code).toBe(-32601);
    expect(answers[2]!.error?.code).toBe(-32602);
    expect(answers[3]!.error?.code).toBe(-32602); // garbage bytes are refused, not a crash
    expect(await rpc('{')).toBeDefined();
    const parseError = (await (
      await fetch(net.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' })
    ).json()) as { error: { code: number } };
    expect(parseError.error.code).toBe(-32700);
  });

  test('slots advance on the clock and block heights follow', async () => {
    const first = await connection.getSlot();
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect(await connection.getSlot()).toBeGreaterThan(first);
    const epoch = await connection.getEpochInfo();
    expect(epoch.blockHeight).toBeGreaterThan(0);
    expect(typeof (await connection.getGenesisHash())).toBe('string');
  });
});

describe('persistence', () => {
  test('accounts, history and the slot survive a restart; a fresh folder is a fresh chain', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'ledgerfeed-localnet-'));
    try {
      let chain = await startLocalnet({ dir, port: 0, slotMs: 50 });
      let conn = new Connection(chain.rpcUrl, 'confirmed');
      const owner = Keypair.generate();
      const signature = await conn.requestAirdrop(owner.publicKey, 5 * LAMPORTS_PER_SOL);
      await conn.confirmTransaction(signature, 'confirmed');
      const genesis = await conn.getGenesisHash();
      const slot = await conn.getSlot();
      await new Promise((resolve) => setTimeout(resolve, 600));
      await chain.close();

      chain = await startLocalnet({ dir, port: 0, slotMs: 50 });
      conn = new Connection(chain.rpcUrl, 'confirmed');
      expect(await conn.getGenesisHash()).toBe(genesis);
      expect(await conn.getBalance(owner.publicKey)).toBe(5 * LAMPORTS_PER_SOL);
      expect(await conn.getSlot()).toBeGreaterThanOrEqual(slot);
      expect((await conn.getTransaction(signature, { commitment: 'confirmed' }))?.slot).toBeTypeOf('number');
      expect(
        (await conn.getSignaturesForAddress(owner.publicKey, {}, 'confirmed')).map((s) => s.signature),
      ).toEqual([signature]);
      await chain.close();

      const fresh = await startLocalnet({ dir: path.join(dir, 'other'), port: 0, slotMs: 50 });
      const freshConn = new Connection(fresh.rpcUrl, 'confirmed');
      expect(await freshConn.getGenesisHash()).not.toBe(genesis);
      expect(await freshConn.getBalance(owner.publicKey)).toBe(0);
      await fresh.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

function transferTo(to: PublicKey, lamports: number): TransactionInstruction {
  return new TransactionInstruction({
    programId: new PublicKey('11111111111111111111111111111111'),
    keys: [
      { pubkey: payer.publicKey, isSigner: true, isWritable: true },
      { pubkey: to, isSigner: false, isWritable: true },
    ],
    data: Buffer.concat([
      Buffer.from([2, 0, 0, 0]),
      Buffer.from(new BigUint64Array([BigInt(lamports)]).buffer),
    ]),
  });
}

async function waitForStatus(signature: string) {
  for (let i = 0; i < 100; i++) {
    const status = (await connection.getSignatureStatuses([signature])).value[0];
    if (status && status.confirmationStatus !== 'processed') return status;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no confirmed status for ${signature}`);
}
