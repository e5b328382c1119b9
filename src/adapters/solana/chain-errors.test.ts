import { describe, expect, test } from 'vitest';
import { ChainError, classifyRpcFailure, type ChainErrorKind, type RpcFailure } from './chain-errors.js';

function networkError(code: string): Error {
  return new TypeError('fetch failed', { cause: Object.assign(new Error(code), { code }) });
}

const table: Array<[string, RpcFailure, ChainErrorKind]> = [
  ['connection refused', { source: 'network', cause: networkError('ECONNREFUSED') }, 'rpc_unavailable'],
  ['connection reset', { source: 'network', cause: networkError('ECONNRESET') }, 'rpc_unavailable'],
  ['abort', { source: 'network', cause: new DOMException('aborted', 'AbortError') }, 'timeout'],
  [
    'AbortSignal.timeout',
    { source: 'network', cause: new DOMException('timed out', 'TimeoutError') },
    'timeout',
  ],
  [
    'undici headers timeout',
    { source: 'network', cause: networkError('UND_ERR_HEADERS_TIMEOUT') },
    'timeout',
  ],
  ['HTTP 502', { source: 'http', status: 502 }, 'rpc_unavailable'],
  ['HTTP 503', { source: 'http', status: 503, body: 'upstream down' }, 'rpc_unavailable'],
  ['HTTP 429', { source: 'http', status: 429 }, 'rate_limited'],
  ['malformed body', { source: 'malformed', detail: 'body is not JSON' }, 'rpc_unavailable'],
  [
    '-32002 BlockhashNotFound',
    {
      source: 'rpc',
      error: {
        code: -32002,
        message: 'Transaction simulation failed: Blockhash not found',
        data: { err: 'BlockhashNotFound', logs: [] },
      },
    },
    'blockhash_expired',
  ],
  [
    '-32002 instruction error',
    {
      source: 'rpc',
      error: {
        code: -32002,
        message: 'Transaction simulation failed',
        data: {
          err: { InstructionError: [0, { Custom: 1 }] },
          logs: ['Program log: Error: insufficient funds'],
        },
      },
    },
    'program_error',
  ],
  [
    '-32003 signature verification',
    { source: 'rpc', error: { code: -32003, message: 'Transaction signature verification failure' } },
    'invalid_transaction',
  ],
  [
    '-32602 invalid params',
    { source: 'rpc', error: { code: -32602, message: 'invalid transaction: failed to deserialize' } },
    'invalid_transaction',
  ],
  [
    '-32601 method not found',
    { source: 'rpc', error: { code: -32601, message: 'Method not found' } },
    'invalid_transaction',
  ],
  [
    '-32005 node unhealthy',
    { source: 'rpc', error: { code: -32005, message: 'Node is behind by 42 slots' } },
    'rpc_unavailable',
  ],
  [
    'on-chain status err',
    { source: 'status', err: { InstructionError: [1, { Custom: 1 }] } },
    'program_error',
  ],
];

describe('classifyRpcFailure', () => {
  test.each(table)('%s is classified as the expected kind', (_name, failure, kind) => {
    const error = classifyRpcFailure(failure, 'sendTransaction');
    expect(error).toBeInstanceOf(ChainError);
    expect(error.kind).toBe(kind);
    expect(error.message).toMatch(/^sendTransaction: /);
  });

  test('exactly rpc_unavailable, rate_limited, timeout and blockhash_expired are retryable', () => {
    const retryable = table
      .map(([, failure]) => classifyRpcFailure(failure))
      .map((e) => [e.kind, e.retryable]);
    for (const [kind, isRetryable] of retryable) {
      expect(isRetryable).toBe(
        ['rpc_unavailable', 'rate_limited', 'timeout', 'blockhash_expired'].includes(String(kind)),
      );
    }
  });

  test('a preflight program error carries the simulation logs and the on-chain error JSON', () => {
    const err = { InstructionError: [0, { Custom: 1 }] };
    const error = classifyRpcFailure({
      source: 'rpc',
      error: {
        code: -32002,
        message: 'Transaction simulation failed',
        data: { err, logs: ['Program log: a', 7] },
      },
    });
    expect(error.err).toEqual(err);
    expect(error.logs).toEqual(['Program log: a']);
    expect(error.rpcCode).toBe(-32002);
    expect(error.message).toContain('{"InstructionError":[0,{"Custom":1}]}');
  });

  test('a rate limit keeps Retry-After as seconds, from delta-seconds or an HTTP date', () => {
    expect(classifyRpcFailure({ source: 'http', status: 429, retryAfter: '7' }).retryAfterSeconds).toBe(7);
    const inTenSeconds = new Date(Date.now() + 10_000).toUTCString();
    const fromDate = classifyRpcFailure({
      source: 'http',
      status: 429,
      retryAfter: inTenSeconds,
    }).retryAfterSeconds;
    expect(fromDate).toBeGreaterThanOrEqual(9);
    expect(fromDate).toBeLessThanOrEqual(11);
    expect(classifyRpcFailure({ source: 'http', status: 429 }).retryAfterSeconds).toBeUndefined();
  });

  test('a status error keeps the on-chain error JSON', () => {
    const error = classifyRpcFailure({
      source: 'status',
      err: { InstructionError: [1, 'InvalidAccountData'] },
    });
    expect(error.err).toEqual({ InstructionError: [1, 'InvalidAccountData'] });
    expect(error.retryable).toBe(false);
  });
});
