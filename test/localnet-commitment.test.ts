import { Keypair, LAMPORTS_PER_SOL } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startLocalnet, type Localnet } from '../src/localnet/localnet.js';

/*
 * The localnet's account reads answer at the commitment they are asked for (issue 49 item 7): a
 * transaction's writes show at `processed` at once, at `confirmed` one slot later, at `finalized`
 * 32 slots later. The clock is stopped (an hour per slot) and moved by warp, so nothing here
 * depends on timing.
 */
/** Lamports of the two transfers (above the rent-exempt minimum). */
const A = LAMPORTS_PER_SOL;
const B = LAMPORTS_PER_SOL / 2;

let net: Localnet;
beforeAll(async () => {
  net = await startLocalnet({ port: 0, slotMs: 3_600_000 });
});
afterAll(async () => {
  await net?.close();
});

async function rpc<T>(method: string, params: unknown[]): Promise<T> {
  const response = await fetch(net.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await response.json()) as { result?: T; error?: { message: string } };
  if (body.error) throw new Error(body.error.message);
  return body.result as T;
}

const lamportsAt = async (address: string, commitment?: string) =>
  (await rpc<{ value: number }>('getBalance', [address, ...(commitment ? [{ commitment }] : [])])).value;

const commitments = async (address: string) => ({
  processed: await lamportsAt(address, 'processed'),
  confirmed: await lamportsAt(address, 'confirmed'),
  finalized: await lamportsAt(address, 'finalized'),
  unasked: await lamportsAt(address),
});

describe('localnet account reads at a commitment', () => {
  test('a transfer shows at processed at once, at confirmed a slot later, at finalized 32 slots later', async () => {
    const owner = Keypair.generate().publicKey.toBase58();
    await rpc('requestAirdrop', [owner, A]);
    expect(await commitments(owner)).toEqual({ processed: A, confirmed: 0, finalized: 0, unasked: A });
    // An account a transaction short of the commitment created does not exist there yet.
    const info = await rpc<{ value: unknown }>('getAccountInfo', [owner, { commitment: 'confirmed' }]);
    expect(info.value).toBeNull();

    net.chain.warp(1);
    expect(await commitments(owner)).toEqual({ processed: A, confirmed: A, finalized: 0, unasked: A });

    // A second transfer: each commitment shows what reached it.
    await rpc('requestAirdrop', [owner, B]);
    const many = await rpc<{ value: Array<{ lamports: number } | null> }>('getMultipleAccounts', [
      [owner],
      { commitment: 'confirmed' },
    ]);
    expect(many.value[0]?.lamports).toBe(A);
    expect(await commitments(owner)).toEqual({
      processed: A + B,
      confirmed: A,
      finalized: 0,
      unasked: A + B,
    });

    net.chain.warp(31);
    expect(await commitments(owner)).toEqual({
      processed: A + B,
      confirmed: A + B,
      finalized: A,
      unasked: A + B,
    });
    net.chain.warp(1);
    expect(await commitments(owner)).toEqual({
      processed: A + B,
      confirmed: A + B,
      finalized: A + B,
      unasked: A + B,
    });
  });

  test('an unknown commitment is refused as invalid params', async () => {
    const owner = Keypair.generate().publicKey.toBase58();
    await expect(lamportsAt(owner, 'rooted')).rejects.toThrow(/unknown commitment/);
  });
});

test('localnet_traffic counts the HTTP requests served and the calls they carried, by method', async () => {
  const before = await rpc<{ httpRequests: number; calls: Record<string, number> }>('localnet_traffic', []);
  const batch = await fetch(net.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([
      { jsonrpc: '2.0', id: 1, method: 'getSlot', params: [] },
      { jsonrpc: '2.0', id: 2, method: 'getSlot', params: [] },
      { jsonrpc: '2.0', id: 3, method: 'getHealth', params: [] },
    ]),
  });
  expect(batch.status).toBe(200);
  const after = await rpc<{ httpRequests: number; calls: Record<string, number> }>('localnet_traffic', []);
  // The batch and the first traffic read: two requests; the three calls and that read's own call.
  expect(after.httpRequests - before.httpRequests).toBe(2);
  expect((after.calls.getSlot ?? 0) - (before.calls.getSlot ?? 0)).toBe(2);
  expect((after.calls.getHealth ?? 0) - (before.calls.getHealth ?? 0)).toBe(1);
  expect(after.calls.localnet_traffic! - (before.calls.localnet_traffic ?? 0)).toBe(1);
});
