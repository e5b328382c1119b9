import type { PublicKey } from '@solana/web3.js';
import {
  Connection,
  Keypair,
  LAMPORTS_PER_SOL,
  sendAndConfirmTransaction,
  SystemProgram,
  Transaction,
} from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import type { LocalChain } from '../src/localnet/chain.js';
import { startLocalnet, type Localnet } from '../src/localnet/localnet.js';
import { createRpcMethods, READ_METHODS } from '../src/localnet/rpc-methods.js';

/**
 * What a web page the developer visits can do to the embedded localnet: read, not write. A page
 * can POST `text/plain` without a CORS preflight, or JSON after one, always with its `Origin`.
 */
const EVIL = 'https://evil.example';
const REFUSED = -32099;

let net: Localnet;
let connection: Connection;
let payer: Keypair;

beforeAll(async () => {
  net = await startLocalnet({ port: 0, slotMs: 100 });
  connection = new Connection(net.rpcUrl, 'confirmed');
  payer = Keypair.generate();
  await connection.confirmTransaction(
    await connection.requestAirdrop(payer.publicKey, 10 * LAMPORTS_PER_SOL),
    'confirmed',
  );
});

afterAll(async () => {
  await new Promise((resolve) => setTimeout(resolve, 600)); // let web3.js close its idle WebSocket
  await net?.close();
});

/** A POST as a page would send it: its Origin, and `text/plain` unless told otherwise. */
async function fromPage(
  body: unknown,
  headers: Record<string, string> = { origin: EVIL, 'content-type': 'text/plain;charset=UTF-8' },
) {
  const response = await fetch(net.rpcUrl, { method: 'POST', headers, body: JSON.stringify(body) });
  // One answer, or a batch's array of them.
  const answer: any = await response.json();
  return { status: response.status, headers: response.headers, body: answer };
}

interface RpcAnswer {
  id: unknown;
  result?: unknown;
  error?: { code: number; message: string };
}

const call = (id: number, method: string, params: unknown[] = []) => ({ jsonrpc: '2.0', id, method, params });

const lamportsOf = async (address: PublicKey) => connection.getBalance(address, 'processed');

describe('state-changing calls a web page sends are refused', () => {
  test('a text/plain requestAirdrop from a foreign origin moves nothing', async () => {
    const attacker = Keypair.generate().publicKey;
    const answer = await fromPage(call(1, 'requestAirdrop', [attacker.toBase58(), 5 * LAMPORTS_PER_SOL]));
    expect(answer.status).toBe(415);
    expect(answer.body).toEqual({
      jsonrpc: '2.0',
      id: 1,
      error: { code: REFUSED, message: expect.stringContaining('Content-Type: application/json') },
    });
    expect(await lamportsOf(attacker)).toBe(0);
    expect(await connection.getSignaturesForAddress(attacker, undefined, 'confirmed')).toEqual([]);
  });

  test('a JSON requestAirdrop (what a page sends after the preflight) is refused for its Origin', async () => {
    const preflight = await fetch(net.rpcUrl, {
      method: 'OPTIONS',
      headers: { origin: EVIL, 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    const attacker = Keypair.generate().publicKey;
    for (const origin of [EVIL, 'null', 'http://127.0.0.1:3000']) {
      const answer = await fromPage(call(2, 'requestAirdrop', [attacker.toBase58(), LAMPORTS_PER_SOL]), {
        origin,
        'content-type': 'application/json',
      });
      expect(answer.status).toBe(403);
      expect(answer.body.error).toEqual({
        code: REFUSED,
        message: expect.stringContaining(`refused to web pages (Origin: ${origin})`),
      });
    }
    expect(await lamportsOf(attacker)).toBe(0);
  });

  test('localnet_setAccount from a page leaves the account as it was', async () => {
    const target = Keypair.generate().publicKey;
    const placed = { lamports: 1_000_000, data: [Buffer.from('mint').toString('base64'), 'base64'] };
    const owner = SystemProgram.programId.toBase58();
    // From Node (no Origin, JSON), as the bootstrap places the USDC mint: allowed.
    const setUp = await fromPage(call(3, 'localnet_setAccount', [target.toBase58(), { ...placed, owner }]), {
      'content-type': 'application/json',
    });
    expect(setUp).toMatchObject({ status: 200, body: { result: null } });
    const forged = { lamports: 9_000_000, data: [Buffer.from('evil').toString('base64'), 'base64'], owner };
    const pages: Array<Record<string, string>> = [
      { origin: EVIL, 'content-type': 'text/plain' },
      { origin: EVIL, 'content-type': 'application/json' },
      { 'content-type': 'application/x-www-form-urlencoded' },
    ];
    for (const headers of pages) {
      const answer = await fromPage(call(4, 'localnet_setAccount', [target.toBase58(), forged]), headers);
      expect([403, 415]).toContain(answer.status);
      expect(answer.body.error.code).toBe(REFUSED);
    }
    const account = await connection.getAccountInfo(target, 'processed');
    expect(account?.lamports).toBe(1_000_000);
    expect(account?.data.toString()).toBe('mint');
  });

  test('a signed sendTransaction from a page does not land', async () => {
    const receiver = Keypair.generate().publicKey;
    const { blockhash } = await connection.getLatestBlockhash();
    const tx = new Transaction({ feePayer: payer.publicKey, recentBlockhash: blockhash }).add(
      SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: receiver, lamports: 1_000_000 }),
    );
    tx.sign(payer);
    const wire = tx.serialize().toString('base64');
    const answer = await fromPage(call(5, 'sendTransaction', [wire, { encoding: 'base64' }]));
    expect(answer.status).toBe(415);
    expect(answer.body.error.code).toBe(REFUSED);
    expect(await lamportsOf(receiver)).toBe(0);
  });

  test('a batch hiding one airdrop among reads is refused whole, each request answered by id', async () => {
    const attacker = Keypair.generate().publicKey;
    const answer = await fromPage([
      call(10, 'getSlot'),
      call(11, 'requestAirdrop', [attacker.toBase58(), LAMPORTS_PER_SOL]),
      { jsonrpc: '2.0', method: 'getHealth' },
    ]);
    expect(answer.status).toBe(415);
    expect((answer.body as RpcAnswer[]).map((a) => a.id)).toEqual([10, 11, null]);
    for (const refused of answer.body) expect(refused.error.code).toBe(REFUSED);
    const json = await fromPage(
      [call(12, 'getSlot'), call(13, 'localnet_setAccount', [attacker.toBase58()])],
      {
        origin: EVIL,
        'content-type': 'application/json',
      },
    );
    expect(json.status).toBe(403);
    expect(json.body).toHaveLength(2);
    expect(await lamportsOf(attacker)).toBe(0);
  });
});

test('the methods refused to pages are exactly the ones that change the chain', () => {
  const methods = Object.keys(createRpcMethods({} as LocalChain));
  expect(methods.filter((method) => !READ_METHODS.has(method)).sort()).toEqual([
    'localnet_blockFaults',
    'localnet_setAccount',
    'requestAirdrop',
    'sendTransaction',
  ]);
  expect([...READ_METHODS].filter((method) => !methods.includes(method))).toEqual([]);
});

describe('what stays open', () => {
  test('reads answer a page from any origin, with CORS headers, whatever the body type', async () => {
    for (const headers of [
      { origin: EVIL, 'content-type': 'text/plain' },
      { origin: EVIL, 'content-type': 'application/json' },
    ]) {
      const slot = await fromPage(call(20, 'getSlot'), headers);
      expect(slot.status).toBe(200);
      expect(slot.headers.get('access-control-allow-origin')).toBe('*');
      expect(slot.body.result).toBeGreaterThan(0);
      const balance = await fromPage(call(21, 'getBalance', [payer.publicKey.toBase58()]), headers);
      expect(balance.status).toBe(200);
      expect(balance.body.result.value).toBeGreaterThan(0);
    }
    const batch = await fromPage([call(22, 'getHealth'), call(23, 'getGenesisHash')]);
    expect((batch.body as RpcAnswer[]).map((a) => a.result)).toEqual(['ok', expect.any(String)]);
  });

  test('a web3.js Connection in Node airdrops, sends and confirms as before', async () => {
    const owner = Keypair.generate();
    await connection.confirmTransaction(await connection.requestAirdrop(owner.publicKey, LAMPORTS_PER_SOL));
    const receiver = Keypair.generate().publicKey;
    const { blockhash } = await connection.getLatestBlockhash();
    await sendAndConfirmTransaction(
      connection,
      new Transaction({ feePayer: owner.publicKey, recentBlockhash: blockhash }).add(
        SystemProgram.transfer({ fromPubkey: owner.publicKey, toPubkey: receiver, lamports: 2_000_000 }),
      ),
      [owner],
    );
    expect(await connection.getBalance(receiver)).toBe(2_000_000);
  });

  test("a WebSocket client cannot end another client's subscriptions", async () => {
    const open = async () => {
      const socket = new WebSocket(net.wsUrl, { headers: { origin: EVIL } });
      await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
      const answers = new Map<number, unknown>();
      const notified: number[] = [];
      socket.on('message', (data: Buffer) => {
        const message = JSON.parse(data.toString()) as { id?: number; result?: unknown; method?: string };
        if (message.method === 'slotNotification') notified.push(1);
        else if (message.id !== undefined) answers.set(message.id, message.result);
      });
      const ask = async (id: number, method: string, params: unknown[] = []) => {
        socket.send(JSON.stringify(call(id, method, params)));
        while (!answers.has(id)) await new Promise((resolve) => setTimeout(resolve, 10));
        return answers.get(id);
      };
      return { socket, ask, notified };
    };
    const victim = await open();
    const page = await open();
    const subscription = (await victim.ask(1, 'slotSubscribe')) as number;
    expect(await page.ask(1, 'slotUnsubscribe', [subscription])).toBe(false);
    const before = victim.notified.length;
    while (victim.notified.length < before + 2) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await victim.ask(2, 'slotUnsubscribe', [subscription])).toBe(true);
    victim.socket.close();
    page.socket.close();
  });
});
