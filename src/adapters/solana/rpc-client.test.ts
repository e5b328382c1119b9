import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { createRpcClient, type RpcClient } from './rpc-client.js';
import { failureOf } from '../../../test/support/failure-of.js';

/**
 * A JSON-RPC peer on 127.0.0.1 that answers whatever the current test scripts: `reply` gets each
 * parsed request body and writes the response.
 */
type Reply = (body: unknown, res: ServerResponse) => void;
let reply: Reply = () => {};
const received: unknown[] = [];
const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  let text = '';
  req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  req.on('end', () => {
    const body = JSON.parse(text) as unknown;
    received.push(body);
    reply(body, res);
  });
});
let url = '';

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
beforeEach(() => {
  received.length = 0;
});

function json(res: ServerResponse, value: unknown, status = 200, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(value));
}

type Req = { id: number; method: string; params: unknown[] };
/** Answers each JSON-RPC request (single or batch) with `answer(req)` as `result` or `error`. */
function rpc(answer: (req: Req) => { result: unknown } | { error: unknown }): Reply {
  return (body, res) => {
    const one = (req: Req) => ({ jsonrpc: '2.0', id: req.id, ...answer(req) });
    json(res, Array.isArray(body) ? (body as Req[]).map(one) : one(body as Req));
  };
}

describe('createRpcClient', () => {
  let client: RpcClient;
  beforeAll(() => {
    client = createRpcClient(url, { timeoutMs: 500 });
  });

  test('call() posts a JSON-RPC 2.0 request and returns its result', async () => {
    reply = rpc((req) => ({ result: { value: { blockhash: 'abc', lastValidBlockHeight: 150 }, echo: req } }));
    await expect(client.getLatestBlockhash('confirmed')).resolves.toEqual({
      blockhash: 'abc',
      lastValidBlockHeight: 150,
    });
    expect(received[0]).toMatchObject({
      jsonrpc: '2.0',
      method: 'getLatestBlockhash',
      params: [{ commitment: 'confirmed' }],
    });
  });

  test('sendTransaction sends base64 with the preflight options and returns the signature', async () => {
    reply = rpc(() => ({ result: '5sig' }));
    const wire = Buffer.from([1, 2, 3, 250]);
    await expect(
      client.sendTransaction(wire, { skipPreflight: false, preflightCommitment: 'confirmed' }),
    ).resolves.toBe('5sig');
    expect((received[0] as Req).params).toEqual([
      wire.toString('base64'),
      { encoding: 'base64', skipPreflight: false, preflightCommitment: 'confirmed' },
    ]);
  });

  test('batch() sends one HTTP request and matches answers to calls by id, whatever their order', async () => {
    reply = (body, res) => {
      const reqs = (body as Req[]).slice().reverse();
      json(
        res,
        reqs.map((r) =>
          r.method === 'bad'
            ? { jsonrpc: '2.0', id: r.id, error: { code: -32601, message: 'Method not found' } }
            : { jsonrpc: '2.0', id: r.id, result: r.params[0] },
        ),
      );
    };
    const items = await client.batch<number>([
      { method: 'echo', params: [1] },
      { method: 'bad', params: [] },
      { method: 'echo', params: [3] },
    ]);
    expect(received).toHaveLength(1);
    expect(items[0]).toEqual({ result: 1 });
    expect(items[2]).toEqual({ result: 3 });
    expect(items[1] && 'error' in items[1] ? items[1].error.kind : undefined).toBe('invalid_transaction');
  });

  test('getSignatureStatuses maps entries and splits more than 256 signatures into several calls', async () => {
    reply = rpc((req) => {
      const sigs = req.params[0] as string[];
      return {
        result: {
          context: { slot: 9 },
          value: sigs.map((s, i) =>
            i % 2 === 0
              ? null
              : {
                  slot: 7,
                  confirmations: 1,
                  err: null,
                  status: { Ok: null },
                  confirmationStatus: s === 'sig1' ? 'confirmed' : 'processed',
                },
          ),
        },
      };
    });
    const signatures = Array.from({ length: 600 }, (_, i) => `sig${i}`);
    const statuses = await client.getSignatureStatuses(signatures);
    expect(received.map((r) => ((r as Req).params[0] as string[]).length)).toEqual([256, 256, 88]);
    expect(statuses).toHaveLength(600);
    expect(statuses[0]).toBeNull();
    expect(statuses[1]).toEqual({ slot: 7, err: null, confirmationStatus: 'confirmed' });
    expect(statuses[599]).toEqual({ slot: 7, err: null, confirmationStatus: 'processed' });
  });

  test('a status without confirmationStatus but with confirmations null counts as finalized', async () => {
    reply = rpc(() => ({
      result: { context: { slot: 1 }, value: [{ slot: 3, confirmations: null, err: null }] },
    }));
    await expect(client.getSignatureStatuses(['a'])).resolves.toEqual([
      { slot: 3, err: null, confirmationStatus: 'finalized' },
    ]);
  });

  test('preflight failure -32002 with BlockhashNotFound throws blockhash_expired', async () => {
    reply = rpc(() => ({
      error: {
        code: -32002,
        message: 'Transaction simulation failed: Blockhash not found',
        data: { err: 'BlockhashNotFound', logs: [] },
      },
    }));
    const error = await failureOf(
      client.sendTransaction(Buffer.from([1]), { skipPreflight: false, preflightCommitment: 'confirmed' }),
    );
    expect(error.kind).toBe('blockhash_expired');
    expect(error.retryable).toBe(true);
  });

  test('preflight failure -32002 with an instruction error throws program_error with logs and err', async () => {
    const err = { InstructionError: [0, { Custom: 1 }] };
    reply = rpc(() => ({
      error: {
        code: -32002,
        message: 'Transaction simulation failed',
        data: { err, logs: ['Program log: Error: insufficient funds'], unitsConsumed: 1200 },
      },
    }));
    const error = await failureOf(
      client.sendTransaction(Buffer.from([1]), { skipPreflight: false, preflightCommitment: 'confirmed' }),
    );
    expect(error).toMatchObject({
      kind: 'program_error',
      retryable: false,
      err,
      logs: ['Program log: Error: insufficient funds'],
    });
  });

  test('-32003 signature verification failure throws invalid_transaction', async () => {
    reply = rpc(() => ({ error: { code: -32003, message: 'Transaction signature verification failure' } }));
    expect((await failureOf(client.call('sendTransaction', []))).kind).toBe('invalid_transaction');
  });

  test('HTTP 429 throws rate_limited keeping Retry-After seconds', async () => {
    reply = (_body, res) => json(res, { error: 'slow down' }, 429, { 'retry-after': '3' });
    const error = await failureOf(client.getBlockHeight('confirmed'));
    expect(error).toMatchObject({ kind: 'rate_limited', retryable: true, retryAfterSeconds: 3 });
  });

  test('HTTP 503 throws rpc_unavailable', async () => {
    reply = (_body, res) => res.writeHead(503).end('Service Unavailable');
    expect((await failureOf(client.getBlockHeight('confirmed'))).kind).toBe('rpc_unavailable');
  });

  test('a body that is not JSON throws rpc_unavailable', async () => {
    reply = (_body, res) => res.writeHead(200).end('<html>gateway</html>');
    expect((await failureOf(client.getBlockHeight('confirmed'))).kind).toBe('rpc_unavailable');
  });

  test('a result of the wrong shape throws rpc_unavailable instead of returning garbage', async () => {
    reply = rpc(() => ({ result: 'not a number' }));
    expect((await failureOf(client.getBlockHeight('confirmed'))).kind).toBe('rpc_unavailable');
  });

  test('a server that never answers throws timeout after timeoutMs', async () => {
    reply = () => {}; // keep the request open
    const started = Date.now();
    const error = await failureOf(createRpcClient(url, { timeoutMs: 100 }).getBlockHeight('confirmed'));
    expect(error.kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  test('a refused connection throws rpc_unavailable', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = await failureOf(createRpcClient(`http://127.0.0.1:${port}`).getBlockHeight('confirmed'));
    expect(error.kind).toBe('rpc_unavailable');
    expect(error.message).toContain('ECONNREFUSED');
  });
});
