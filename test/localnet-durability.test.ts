import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Keypair } from '@solana/web3.js';
import { afterEach, expect, test, vi } from 'vitest';
import WebSocket from 'ws';
import { ChainWriter, type JournalBatch } from '../src/localnet/chain-persistence.js';
import { LocalChain } from '../src/localnet/chain.js';
import { startLocalnet } from '../src/localnet/localnet.js';

const folders: string[] = [];
function folder(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ledgerfeed-durability-'));
  folders.push(dir);
  return dir;
}
afterEach(() => {
  vi.restoreAllMocks();
  for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function rpc<T>(url: string, method: string, params: unknown[]): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await response.json()) as { result?: T; error?: unknown };
  if (body.error) throw new Error(JSON.stringify(body.error));
  return body.result as T;
}

interface Status {
  confirmationStatus: string;
  confirmations: number | null;
}
const statusOf = async (url: string, signature: string) =>
  (await rpc<{ value: Array<Status | null> }>(url, 'getSignatureStatuses', [[signature]])).value[0];

/** ChainWriter's own write, to call from a spy that replaces it. */
function originalWrite() {
  return Object.getOwnPropertyDescriptor(ChainWriter.prototype, 'write')!.value as (
    this: ChainWriter,
    batch: JournalBatch,
  ) => ReturnType<ChainWriter['write']>;
}

/** Holds every write of the folder until `release()`: a disk that has not answered yet. */
function holdWrites() {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const write = originalWrite();
  const spy = vi.spyOn(ChainWriter.prototype, 'write').mockImplementation(async function (
    this: ChainWriter,
    batch: JournalBatch,
  ) {
    await gate;
    return write.call(this, batch);
  });
  return { release, spy };
}

test('with a data folder a transaction stays processed until a write puts it on disk, then is confirmed, and finalized 32 slots on', async () => {
  const held = holdWrites();
  const net = await startLocalnet({ dir: folder(), port: 0, slotMs: 50 });
  try {
    const owner = Keypair.generate().publicKey.toBase58();
    const socket = new WebSocket(net.wsUrl);
    await new Promise((resolve) => socket.once('open', resolve));
    const notified: unknown[] = [];
    socket.on('message', (data: Buffer) => {
      const message = JSON.parse(data.toString()) as { method?: string };
      if (message.method === 'signatureNotification') notified.push(message);
    });

    const signature = await rpc<string>(net.rpcUrl, 'requestAirdrop', [owner, 1_000_000]);
    socket.send(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'signatureSubscribe',
        params: [signature, { commitment: 'confirmed' }],
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 400)); // 8 slots pass over it

    expect(held.spy).toHaveBeenCalled(); // a write was started, and has not completed
    expect(await statusOf(net.rpcUrl, signature)).toMatchObject({
      confirmationStatus: 'processed',
      confirmations: 0,
    });
    expect(
      await rpc(net.rpcUrl, 'getTransaction', [signature, { commitment: 'confirmed', encoding: 'json' }]),
    ).toBeNull();
    expect(await rpc(net.rpcUrl, 'getSignaturesForAddress', [owner, { commitment: 'confirmed' }])).toEqual(
      [],
    );
    expect(notified).toEqual([]);
    expect(await rpc(net.rpcUrl, 'getBalance', [owner])).toMatchObject({ value: 1_000_000 }); // processed state

    held.release();
    await net.chain.persist();
    const confirmed = await statusOf(net.rpcUrl, signature);
    expect(confirmed?.confirmationStatus).toBe('confirmed');
    expect(confirmed?.confirmations).toBeGreaterThanOrEqual(8);
    expect(
      await rpc(net.rpcUrl, 'getTransaction', [signature, { commitment: 'confirmed', encoding: 'json' }]),
    ).toMatchObject({ meta: { err: null } });
    expect(
      await rpc<Array<{ signature: string }>>(net.rpcUrl, 'getSignaturesForAddress', [
        owner,
        { commitment: 'confirmed' },
      ]),
    ).toMatchObject([{ signature, confirmationStatus: 'confirmed' }]);
    await expect.poll(() => notified.length).toBe(1);
    socket.close();

    // The clock runs: the slot boundary is checked without yielding to it.
    const landed = net.chain.store.get(signature)!.slot;
    net.chain.warp(landed + 31 - net.chain.slot);
    expect(net.chain.status(signature)).toMatchObject({ confirmationStatus: 'confirmed', confirmations: 31 });
    net.chain.warp(1);
    expect(net.chain.status(signature)?.confirmationStatus).toBe('finalized');
    expect(await statusOf(net.rpcUrl, signature)).toMatchObject({
      confirmationStatus: 'finalized',
      confirmations: null,
    });
    expect(
      await rpc(net.rpcUrl, 'getTransaction', [signature, { commitment: 'finalized', encoding: 'json' }]),
    ).not.toBeNull();
  } finally {
    held.release();
    await net.close();
  }
});

test('a write that fails leaves transactions processed; the next slot writes them and confirms them', async () => {
  const write = originalWrite();
  let failures = 2;
  vi.spyOn(ChainWriter.prototype, 'write').mockImplementation(async function (
    this: ChainWriter,
    batch: JournalBatch,
  ) {
    if (failures-- > 0) throw new Error('disk full (simulated)');
    return write.call(this, batch);
  });
  vi.spyOn(console, 'error').mockImplementation(() => {});
  const chain = LocalChain.open({ dir: folder(), slotMs: 60_000 });
  try {
    const signature = chain.airdrop(Keypair.generate().publicKey.toBase58(), 1_000_000n);
    chain.warp(1);
    await expect(chain.persist()).rejects.toThrow('disk full');
    expect(chain.status(signature)?.confirmationStatus).toBe('processed');
    chain.warp(1); // the next slot writes again: it works
    await chain.persist();
    expect(chain.status(signature)?.confirmationStatus).toBe('confirmed');
  } finally {
    await chain.close();
  }
});

test('a copy of the folder taken while the chain runs holds every confirmed transaction and its accounts', async () => {
  const dir = folder();
  const chain = LocalChain.open({ dir, slotMs: 60_000 });
  const copy = folder();
  try {
    const owners = Array.from({ length: 20 }, () => Keypair.generate().publicKey.toBase58());
    const signatures = owners.map((owner, i) => chain.airdrop(owner, BigInt(1_000_000 + i)));
    const placed = Keypair.generate().publicKey.toBase58();
    chain.setAccount(placed, {
      lamports: 1_000_077n,
      data: Buffer.from('placed'),
      owner: owners[0]!,
      executable: false,
    });
    chain.warp(1);
    await chain.persist();
    for (const signature of signatures) expect(chain.status(signature)?.confirmationStatus).toBe('confirmed');
    // Landed after the last write: processed, and a crash now may lose it.
    const late = chain.airdrop(Keypair.generate().publicKey.toBase58(), 1_000_000n);
    expect(chain.status(late)?.confirmationStatus).toBe('processed');

    // No write is under way (nothing older than this slot waits): the folder is as a SIGKILL now
    // would leave it, with no snapshot since the chain started.
    cpSync(dir, copy, { recursive: true });
    expect(JSON.parse(readFileSync(path.join(copy, 'chain.json'), 'utf8'))).toMatchObject({
      snapshotLines: 0,
    });
    const restarted = LocalChain.open({ dir: copy, slotMs: 60_000 });
    try {
      for (const [i, signature] of signatures.entries()) {
        expect(restarted.status(signature)?.confirmationStatus).toBe('confirmed');
        expect(restarted.getAccount(owners[i]!)?.lamports).toBe(BigInt(1_000_000 + i));
      }
      expect(restarted.getAccount(placed)).toMatchObject({ lamports: 1_000_077n, owner: owners[0] });
      expect(Buffer.from(restarted.getAccount(placed)!.data).toString()).toBe('placed');
      expect(restarted.status(late)).toBeNull();
      expect(restarted.transactionCount).toBe(20);
      expect(restarted.slot).toBe(chain.slot);
      const again = restarted.airdrop(owners[0]!, 1_000_000n);
      restarted.warp(1);
      await restarted.persist();
      expect(restarted.status(again)?.confirmationStatus).toBe('confirmed');
    } finally {
      await restarted.close();
    }
  } finally {
    await chain.close();
  }
});

test('a torn last journal line (a crash mid-write) is cut off on load, and the chain goes on after it', async () => {
  const dir = folder();
  let chain = LocalChain.open({ dir, slotMs: 60_000 });
  const owner = Keypair.generate().publicKey.toBase58();
  const signature = chain.airdrop(owner, 4_000_000n);
  chain.warp(1);
  await chain.persist();
  const journal = path.join(dir, 'transactions.jsonl');
  const whole = readFileSync(journal, 'utf8');
  // What a crash in the middle of the next write leaves: copy the folder, tear the copy's journal.
  const copy = folder();
  cpSync(dir, copy, { recursive: true });
  await chain.close();
  appendFileSync(path.join(copy, 'transactions.jsonl'), whole.slice(0, 120));

  chain = LocalChain.open({ dir: copy, slotMs: 60_000 });
  try {
    expect(readFileSync(path.join(copy, 'transactions.jsonl'), 'utf8')).toBe(whole);
    expect(chain.status(signature)?.confirmationStatus).toBe('confirmed');
    expect(chain.getAccount(owner)?.lamports).toBe(4_000_000n);
    const next = chain.airdrop(owner, 1_000_000n);
    chain.warp(1);
    await chain.persist();
    expect(chain.status(next)?.confirmationStatus).toBe('confirmed');
  } finally {
    await chain.close();
  }
  const reopened = LocalChain.open({ dir: copy, slotMs: 60_000 });
  try {
    expect(reopened.getAccount(owner)?.lamports).toBe(5_000_000n);
    expect(reopened.transactionCount).toBe(2);
  } finally {
    await reopened.close();
  }
});

test('an in-memory chain has no disk to wait for: confirmed one slot after executing', async () => {
  const chain = LocalChain.open({ slotMs: 60_000 });
  try {
    const signature = chain.airdrop(Keypair.generate().publicKey.toBase58(), 1_000_000n);
    expect(chain.status(signature)?.confirmationStatus).toBe('processed');
    chain.warp(1);
    expect(chain.status(signature)?.confirmationStatus).toBe('confirmed');
  } finally {
    await chain.close();
  }
});

test('a chain restarted from its folder never issues a blockhash again, so no dropped transaction lives again', async () => {
  const dir = folder();
  const chain = LocalChain.open({ dir, slotMs: 60_000 });
  const issued = new Set<string>();
  chain.airdrop(Keypair.generate().publicKey.toBase58(), 1_000_000n);
  for (let i = 0; i < 5; i++) {
    issued.add(chain.latestBlockhash().blockhash);
    chain.warp(1);
  }
  await chain.persist(); // chain.json names blockhashes issued after the (genesis) snapshot
  const copy = folder();
  cpSync(dir, copy, { recursive: true });
  await chain.close();

  const restarted = LocalChain.open({ dir: copy, slotMs: 60_000 });
  try {
    for (let i = 0; i < 10; i++) {
      restarted.warp(1);
      expect(issued.has(restarted.latestBlockhash().blockhash)).toBe(false);
    }
  } finally {
    await restarted.close();
  }
});
