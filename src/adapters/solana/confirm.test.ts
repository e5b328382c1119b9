import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { confirmMany, sendAndConfirm, type SignedForSend } from './confirm.js';
import { createRpcClient, type RpcClient } from './rpc-client.js';
import { createSignatureWatcher } from './signature-watcher.js';
import { failureOf } from '../../../test/support/failure-of.js';

/**
 * A scripted JSON-RPC peer on 127.0.0.1. A test's "wire" is the UTF-8 of its signature, so the
 * peer knows which transaction each sendTransaction carries. Each signature has a script of
 * statuses, one consumed per getSignatureStatuses (the last one repeats).
 */
type Status = { slot: number; err: unknown; confirmationStatus: string } | null;
interface Peer {
  height: number;
  scripts: Map<string, Status[]>;
  /** Statuses found only by a history-wide lookup (searchTransactionHistory: true). */
  history: Map<string, Status>;
  sendErrors: Map<string, unknown>;
  /** getSignatureStatuses HTTP requests to fail with 503 before answering again. */
  failStatusRequests: number;
  sends: Array<{ signature: string; skipPreflight: boolean; preflightCommitment: string }>;
  /** One entry per HTTP request: the JSON-RPC methods it carried. */
  requests: string[][];
  historyLookups: string[][];
}
let peer: Peer;
function resetPeer(): void {
  peer = {
    height: 100,
    scripts: new Map(),
    history: new Map(),
    sendErrors: new Map(),
    failStatusRequests: 0,
    sends: [],
    requests: [],
    historyLookups: [],
  };
}
resetPeer();

type Req = { id: number; method: string; params: unknown[] };
function answer(req: Req): { result: unknown } | { error: unknown } {
  switch (req.method) {
    case 'sendTransaction': {
      const signature = Buffer.from(String(req.params[0]), 'base64').toString('utf8');
      const config = req.params[1] as { skipPreflight: boolean; preflightCommitment: string };
      peer.sends.push({
        signature,
        skipPreflight: config.skipPreflight,
        preflightCommitment: config.preflightCommitment,
      });
      const error = config.skipPreflight ? undefined : peer.sendErrors.get(signature);
      return error === undefined ? { result: signature } : { error };
    }
    case 'getBlockHeight':
      return { result: peer.height };
    case 'getSignatureStatuses': {
      const [signatures, config] = req.params as [string[], { searchTransactionHistory: boolean }];
      if (config.searchTransactionHistory) {
        peer.historyLookups.push(signatures);
        return {
          result: { context: { slot: 1 }, value: signatures.map((s) => peer.history.get(s) ?? null) },
        };
      }
      const value = signatures.map((s) => {
        const script = peer.scripts.get(s) ?? [];
        return (script.length > 1 ? script.shift() : script[0]) ?? null;
      });
      return { result: { context: { slot: 1 }, value } };
    }
    default:
      return { error: { code: -32601, message: 'Method not found' } };
  }
}

const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  let text = '';
  req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  req.on('end', () => {
    const body = JSON.parse(text) as Req | Req[];
    const reqs = Array.isArray(body) ? body : [body];
    peer.requests.push(reqs.map((r) => r.method));
    if (reqs[0]?.method === 'getSignatureStatuses' && peer.failStatusRequests > 0) {
      peer.failStatusRequests--;
      res.writeHead(503).end('busy');
      return;
    }
    const answers = reqs.map((r) => ({ jsonrpc: '2.0', id: r.id, ...answer(r) }));
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify(Array.isArray(body) ? answers : answers[0]));
  });
});
let rpc: RpcClient;

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  rpc = createRpcClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { timeoutMs: 2_000 });
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
beforeEach(resetPeer);

const tx = (signature: string, lastValidBlockHeight = 250): SignedForSend => ({
  wire: Buffer.from(signature, 'utf8'),
  signature,
  lastValidBlockHeight,
});
const at = (confirmationStatus: string, err: unknown = null, slot = 42) => ({
  slot,
  err,
  confirmationStatus,
});
const fast = { pollMs: 5, resendMs: 60_000 } as const;

describe('sendAndConfirm', () => {
  test('sends with preflight, then polls through processed until confirmed and returns the slot', async () => {
    peer.scripts.set('A', [null, at('processed'), at('processed'), at('confirmed', null, 77)]);
    await expect(sendAndConfirm(rpc, tx('A'), { commitment: 'confirmed', ...fast })).resolves.toEqual({
      signature: 'A',
      slot: 77,
    });
    expect(peer.sends).toEqual([{ signature: 'A', skipPreflight: false, preflightCommitment: 'confirmed' }]);
    expect(peer.scripts.get('A')).toHaveLength(1); // every scripted status was seen
  });

  test('with commitment finalized, a confirmed status is not enough', async () => {
    peer.scripts.set('A', [at('confirmed'), at('confirmed'), at('finalized', null, 80)]);
    await expect(sendAndConfirm(rpc, tx('A'), { commitment: 'finalized', ...fast })).resolves.toEqual({
      signature: 'A',
      slot: 80,
    });
    expect(peer.scripts.get('A')).toHaveLength(1);
  });

  test('a transaction that landed with an error throws program_error with the on-chain err, once confirmed', async () => {
    const err = { InstructionError: [0, { Custom: 1 }] };
    peer.scripts.set('A', [at('processed', err), at('confirmed', err)]);
    const error = await failureOf(sendAndConfirm(rpc, tx('A'), { commitment: 'confirmed', ...fast }));
    expect(error).toMatchObject({ kind: 'program_error', retryable: false, err });
    expect(peer.scripts.get('A')).toHaveLength(1);
  });

  test('throws a retryable blockhash_expired once block height passes lastValidBlockHeight with no status', async () => {
    peer.height = 251;
    const error = await failureOf(sendAndConfirm(rpc, tx('A', 250), { commitment: 'confirmed', ...fast }));
    expect(error).toMatchObject({ kind: 'blockhash_expired', retryable: true });
    expect(peer.historyLookups).toEqual([['A']]);
  });

  test('keeps waiting while block height is at lastValidBlockHeight, then expires when it passes', async () => {
    peer.height = 250;
    const pending = sendAndConfirm(rpc, tx('A', 250), { commitment: 'confirmed', pollMs: 5 });
    setTimeout(() => (peer.height = 251), 100);
    expect((await failureOf(pending)).kind).toBe('blockhash_expired');
    expect(peer.requests.filter((r) => r[0] === 'getSignatureStatuses').length).toBeGreaterThan(3);
  });

  test('past its height, a transaction found by the history-wide lookup is confirmed, not expired', async () => {
    peer.height = 999;
    peer.history.set('A', at('finalized', null, 12));
    await expect(sendAndConfirm(rpc, tx('A', 250), { commitment: 'confirmed', ...fast })).resolves.toEqual({
      signature: 'A',
      slot: 12,
    });
  });

  test('a preflight failure throws the classified error with logs and sends nothing more', async () => {
    peer.sendErrors.set('A', {
      code: -32002,
      message: 'Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1',
      data: {
        err: { InstructionError: [0, { Custom: 1 }] },
        logs: ['Program log: Error: insufficient funds'],
      },
    });
    const error = await failureOf(sendAndConfirm(rpc, tx('A'), { commitment: 'confirmed', ...fast }));
    expect(error).toMatchObject({ kind: 'program_error', logs: ['Program log: Error: insufficient funds'] });
    expect(peer.requests.flat()).toEqual(['sendTransaction']);
  });

  test('a preflight BlockhashNotFound for a transaction that already landed long ago confirms it', async () => {
    peer.sendErrors.set('A', {
      code: -32002,
      message: 'Blockhash not found',
      data: { err: 'BlockhashNotFound', logs: [] },
    });
    peer.height = 999;
    peer.history.set('A', at('finalized', null, 5));
    await expect(sendAndConfirm(rpc, tx('A', 250), { commitment: 'finalized', ...fast })).resolves.toEqual({
      signature: 'A',
      slot: 5,
    });
  });

  test('a preflight AlreadyProcessed (the bytes landed before) keeps polling and confirms', async () => {
    peer.sendErrors.set('A', {
      code: -32002,
      message: 'This transaction has already been processed',
      data: { err: 'AlreadyProcessed', logs: [] },
    });
    peer.scripts.set('A', [at('confirmed', null, 9)]);
    await expect(sendAndConfirm(rpc, tx('A'), { commitment: 'confirmed', ...fast })).resolves.toEqual({
      signature: 'A',
      slot: 9,
    });
  });

  test('re-sends the same bytes with skipPreflight while waiting, and stops when resend is false', async () => {
    peer.scripts.set('A', [...Array<null>(30).fill(null), at('confirmed')]);
    await sendAndConfirm(rpc, tx('A'), { commitment: 'confirmed', pollMs: 5, resendMs: 20 });
    expect(peer.sends.length).toBeGreaterThanOrEqual(3);
    expect(peer.sends.slice(1).every((s) => s.signature === 'A' && s.skipPreflight)).toBe(true);

    resetPeer();
    peer.scripts.set('B', [...Array<null>(30).fill(null), at('confirmed')]);
    await sendAndConfirm(rpc, tx('B'), { commitment: 'confirmed', pollMs: 5, resendMs: 20, resend: false });
    expect(peer.sends).toHaveLength(1);
  });

  test('rides out a few failed status polls (HTTP 503) and still confirms', async () => {
    peer.failStatusRequests = 3;
    peer.scripts.set('A', [at('confirmed', null, 3)]);
    await expect(sendAndConfirm(rpc, tx('A'), { commitment: 'confirmed', ...fast })).resolves.toEqual({
      signature: 'A',
      slot: 3,
    });
    expect(peer.failStatusRequests).toBe(0);
  });
});

describe('confirmMany', () => {
  test('settles each item in order with one getSignatureStatuses per poll and batched sends', async () => {
    const err = { InstructionError: [1, { Custom: 1 }] };
    const items = Array.from({ length: 120 }, (_, i) => {
      const signature = `sig-${i}`;
      if (i % 10 === 1) peer.scripts.set(signature, [null, at('confirmed', err)]);
      else if (i % 10 === 2)
        return tx(signature, 99); // never lands; the peer is at height 100
      else peer.scripts.set(signature, [null, at('processed'), at('confirmed', null, 1_000 + i)]);
      return tx(signature);
    });
    peer.sendErrors.set('sig-3', { code: -32003, message: 'Transaction signature verification failure' });

    const outcomes = await confirmMany(rpc, items, { commitment: 'confirmed', ...fast });

    expect(outcomes.map((o) => o.signature)).toEqual(items.map((i) => i.signature));
    outcomes.forEach((outcome, i) => {
      if (i === 3) expect(outcome).toMatchObject({ ok: false, error: { kind: 'invalid_transaction' } });
      else if (i % 10 === 1)
        expect(outcome).toMatchObject({ ok: false, error: { kind: 'program_error', err } });
      else if (i % 10 === 2)
        expect(outcome).toMatchObject({ ok: false, error: { kind: 'blockhash_expired' } });
      else expect(outcome).toEqual({ ok: true, signature: `sig-${i}`, slot: 1_000 + i });
    });
    const sendRequests = peer.requests.filter((r) => r[0] === 'sendTransaction');
    expect(sendRequests).toEqual([Array<string>(120).fill('sendTransaction')]);
    // Every status request is a single call (not one per signature), and there were only a few polls.
    const statusRequests = peer.requests.filter((r) => r[0] === 'getSignatureStatuses');
    expect(statusRequests.every((r) => r.length === 1)).toBe(true);
    expect(statusRequests.length).toBeLessThanOrEqual(5);
  });

  test('returns an empty list for no items without touching the network', async () => {
    await expect(confirmMany(rpc, [], { commitment: 'confirmed' })).resolves.toEqual([]);
    expect(peer.requests).toEqual([]);
  });
});

describe('the shared signature watcher', () => {
  test('a transaction a client waits on (processed) is looked at within ~10 ms, not at the next full poll', async () => {
    const watcher = createSignatureWatcher(rpc, { pollMs: 1_000, resend: false });
    try {
      peer.scripts.set('P', [at('processed')]);
      const started = Date.now();
      await expect(watcher.watch(tx('P'), 'processed')).resolves.toMatchObject({ ok: true, signature: 'P' });
      expect(Date.now() - started).toBeLessThan(500);
    } finally {
      watcher.close();
    }
  });

  test('new processed watches get their first look at once, together, while older ones wait for processedPollMs', async () => {
    const watcher = createSignatureWatcher(rpc, { pollMs: 5_000, processedPollMs: 600, resend: false });
    try {
      // 'OLD' stays unseen: after its first look the loop waits processedPollMs before the next.
      peer.scripts.set('OLD', [null]);
      const old = watcher.watch(tx('OLD'), 'processed');
      while (!peer.requests.some((r) => r.includes('getSignatureStatuses'))) await sleep(5);
      peer.requests.length = 0;
      for (const s of ['N1', 'N2', 'N3']) peer.scripts.set(s, [at('processed')]);
      const started = Date.now();
      const fresh = await Promise.all(['N1', 'N2', 'N3'].map((s) => watcher.watch(tx(s), 'processed')));
      expect(fresh.every((outcome) => outcome.ok)).toBe(true);
      expect(Date.now() - started).toBeLessThan(300);
      // The burst shared one status call (with OLD in it), not one each.
      expect(peer.requests.filter((r) => r[0] === 'getSignatureStatuses')).toHaveLength(1);
      peer.scripts.set('OLD', [at('processed')]);
      await expect(old).resolves.toMatchObject({ ok: true });
    } finally {
      watcher.close();
    }
  });

  test('sends made in one turn of the event loop leave as one batched request', async () => {
    const watcher = createSignatureWatcher(rpc, { resend: false });
    try {
      peer.sendErrors.set('S2', {
        code: -32002,
        message: 'Transaction simulation failed: Blockhash not found',
      });
      const options = { skipPreflight: false, preflightCommitment: 'confirmed' } as const;
      const results = await Promise.all(['S1', 'S2', 'S3'].map((s) => watcher.send(tx(s), options)));
      expect(peer.requests).toEqual([['sendTransaction', 'sendTransaction', 'sendTransaction']]);
      expect(results[0]).toBeNull();
      expect(results[1]).not.toBeNull();
      expect(results[2]).toBeNull();
    } finally {
      watcher.close();
    }
  });
});

describe('the look on send (lookOnSend: a node that executes on receipt)', () => {
  const options = { skipPreflight: false, preflightCommitment: 'confirmed' } as const;

  test('the send asks the statuses in its own request, and the watch after it settles from that answer', async () => {
    const watcher = createSignatureWatcher(rpc, { resend: false, lookOnSend: true });
    try {
      peer.scripts.set('L1', [at('processed', null, 7)]);
      expect(await watcher.send(tx('L1'), options)).toBeNull();
      await expect(watcher.watch(tx('L1'), 'processed')).resolves.toEqual({
        ok: true,
        signature: 'L1',
        slot: 7,
      });
      // One HTTP request in all: the send and its look; no status poll of the watch's own.
      expect(peer.requests).toEqual([['sendTransaction', 'getSignatureStatuses']]);
    } finally {
      watcher.close();
    }
  });

  test('a look that found a failure settles the watch as a poll would; one that found nothing leaves it to the polls', async () => {
    const watcher = createSignatureWatcher(rpc, { resend: false, lookOnSend: true });
    try {
      const err = { InstructionError: [0, { Custom: 1 }] };
      peer.scripts.set('BAD', [at('processed', err)]);
      peer.scripts.set('LATE', [null, at('processed')]);
      await Promise.all([watcher.send(tx('BAD'), options), watcher.send(tx('LATE'), options)]);
      expect(peer.requests).toEqual([['sendTransaction', 'sendTransaction', 'getSignatureStatuses']]);
      const bad = await watcher.watch(tx('BAD'), 'processed');
      expect(bad.ok).toBe(false);
      expect(peer.requests).toHaveLength(1);
      await expect(watcher.watch(tx('LATE'), 'processed')).resolves.toMatchObject({ ok: true });
      expect(peer.requests.slice(1).flat()).toContain('getSignatureStatuses');
    } finally {
      watcher.close();
    }
  });

  test('a look short of the commitment waited for counts for nothing: the watch polls', async () => {
    const watcher = createSignatureWatcher(rpc, { resend: false, pollMs: 50, lookOnSend: true });
    try {
      peer.scripts.set('C', [at('processed'), at('confirmed')]);
      await watcher.send(tx('C'), options);
      await expect(watcher.watch(tx('C'), 'confirmed')).resolves.toMatchObject({ ok: true, signature: 'C' });
      expect(peer.requests.length).toBeGreaterThan(1);
    } finally {
      watcher.close();
    }
  });

  test('off by default, and tune turns it on once the cluster is known', async () => {
    const watcher = createSignatureWatcher(rpc, { resend: false });
    try {
      peer.scripts.set('D1', [at('processed')]);
      peer.scripts.set('D2', [at('processed')]);
      await watcher.send(tx('D1'), options);
      expect(peer.requests).toEqual([['sendTransaction']]);
      watcher.tune({ pollMs: 100, processedPollMs: 10, lookOnSend: true });
      await watcher.send(tx('D2'), options);
      expect(peer.requests[1]).toEqual(['sendTransaction', 'getSignatureStatuses']);
    } finally {
      watcher.close();
    }
  });
});
