/**
 * Every failure of the chain adapter is a ChainError with a kind, so the outbox worker can decide
 * without parsing messages: retry the same bytes later (`retryable`), re-sign with a fresh blockhash
 * (`blockhash_expired`), or reverse the ledger legs (`program_error`, `invalid_transaction`).
 *
 * Messages never carry the RPC URL: provider URLs often embed an API key.
 */
export type ChainErrorKind =
  | 'rpc_unavailable'
  | 'rate_limited'
  | 'timeout'
  | 'blockhash_expired'
  | 'program_error'
  | 'invalid_transaction';

export interface ChainErrorDetails {
  /** Program logs of a failed simulation (preflight), when the node returned them. */
  readonly logs?: readonly string[];
  /** The on-chain error as JSON, e.g. `{ InstructionError: [0, { Custom: 1 }] }` or `"BlockhashNotFound"`. */
  readonly err?: unknown;
  /** JSON-RPC error code, when the failure came from a JSON-RPC error object. */
  readonly rpcCode?: number;
  /** Seconds the server asked us to wait (HTTP Retry-After), for rate_limited. */
  readonly retryAfterSeconds?: number;
  readonly cause?: unknown;
}

/** Kinds where sending the same bytes again later can succeed (expired: only after re-signing). */
const RETRYABLE: Readonly<Record<ChainErrorKind, boolean>> = {
  rpc_unavailable: true,
  rate_limited: true,
  timeout: true,
  blockhash_expired: true,
  program_error: false,
  invalid_transaction: false,
};

export class ChainError extends Error {
  override name = 'ChainError';
  readonly retryable: boolean;
  readonly logs: readonly string[] | undefined;
  readonly err: unknown;
  readonly rpcCode: number | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    readonly kind: ChainErrorKind,
    message: string,
    details: ChainErrorDetails = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.retryable = RETRYABLE[kind];
    this.logs = details.logs;
    this.err = details.err;
    this.rpcCode = details.rpcCode;
    this.retryAfterSeconds = details.retryAfterSeconds;
  }
}

export interface JsonRpcErrorObject {
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

/** What went wrong, as observed by the RPC client; classifyRpcFailure turns it into a ChainError. */
export type RpcFailure =
  /** `fetch` itself threw: connection refused/reset, DNS, abort, timeout. */
  | { readonly source: 'network'; readonly cause: unknown }
  /** The server answered with a non-2xx HTTP status. */
  | {
      readonly source: 'http';
      readonly status: number;
      readonly retryAfter?: string | null;
      readonly body?: string;
    }
  /** The server answered 2xx with a body that is not a JSON-RPC response. */
  | { readonly source: 'malformed'; readonly detail: string }
  /** A JSON-RPC error object. */
  | { readonly source: 'rpc'; readonly error: JsonRpcErrorObject }
  /** `getSignatureStatuses` reported the transaction landed with `err`. */
  | { readonly source: 'status'; readonly err: unknown };

/** Solana JSON-RPC error codes we act on (solana `rpc_custom_error.rs` and JSON-RPC 2.0). */
const SEND_TRANSACTION_PREFLIGHT_FAILURE = -32002;
const TRANSACTION_SIGNATURE_VERIFICATION_FAILURE = -32003;
const INVALID_PARAMS = -32602;
/** Codes where the node is behind, unhealthy or briefly missing data: ask again later. */
const TRANSIENT_RPC_CODES = new Set([
  -32603, // internal error
  -32004, // block not available
  -32005, // node unhealthy
  -32007, // slot skipped / missing in long-term storage
  -32014, // block status not yet available
  -32016, // minimum context slot not reached
]);

/** `what` names the call in messages, e.g. `sendTransaction`. */
export function classifyRpcFailure(failure: RpcFailure, what = 'RPC'): ChainError {
  switch (failure.source) {
    case 'network':
      return classifyNetworkError(failure.cause, what);
    case 'http': {
      const detail = failure.body ? `: ${truncate(failure.body, 200)}` : '';
      if (failure.status === 429) {
        const retryAfterSeconds = parseRetryAfter(failure.retryAfter);
        return new ChainError('rate_limited', `${what}: rate limited by the RPC server (HTTP 429)`, {
          ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
        });
      }
      // 5xx is the server's fault; other 4xx (401, 403, 404, 413) mean the endpoint cannot serve us
      // as configured. Neither says anything about the transaction itself.
      return new ChainError(
        'rpc_unavailable',
        `${what}: RPC server answered HTTP ${failure.status}${detail}`,
      );
    }
    case 'malformed':
      return new ChainError(
        'rpc_unavailable',
        `${what}: RPC server sent a malformed response: ${failure.detail}`,
      );
    case 'rpc':
      return classifyJsonRpcError(failure.error, what);
    case 'status':
      return new ChainError(
        'program_error',
        `${what}: transaction failed on chain: ${describeErr(failure.err)}`,
        {
          err: failure.err,
        },
      );
  }
}

function classifyJsonRpcError(error: JsonRpcErrorObject, what: string): ChainError {
  const rpcCode = error.code;
  if (rpcCode === SEND_TRANSACTION_PREFLIGHT_FAILURE) {
    const data = isRecord(error.data) ? error.data : {};
    const err = data['err'];
    const logs = Array.isArray(data['logs'])
      ? data['logs'].filter((l): l is string => typeof l === 'string')
      : undefined;
    if (err === 'BlockhashNotFound') {
      return new ChainError('blockhash_expired', `${what}: blockhash not found (expired or not yet seen)`, {
        err,
        rpcCode,
        ...(logs ? { logs } : {}),
      });
    }
    return new ChainError(
      'program_error',
      `${what}: simulation failed: ${describeErr(err ?? error.message)}`,
      {
        err,
        rpcCode,
        ...(logs ? { logs } : {}),
      },
    );
  }
  if (rpcCode === TRANSACTION_SIGNATURE_VERIFICATION_FAILURE || rpcCode === INVALID_PARAMS) {
    return new ChainError('invalid_transaction', `${what}: rejected (${rpcCode}): ${error.message}`, {
      rpcCode,
    });
  }
  if (TRANSIENT_RPC_CODES.has(rpcCode)) {
    return new ChainError('rpc_unavailable', `${what}: RPC node error (${rpcCode}): ${error.message}`, {
      rpcCode,
    });
  }
  // Anything else (method not found, invalid request, ...) is a bug on our side or a request the
  // node will never accept: retrying cannot help.
  return new ChainError('invalid_transaction', `${what}: rejected (${rpcCode}): ${error.message}`, {
    rpcCode,
  });
}

const TIMEOUT_CODES = new Set([
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

function classifyNetworkError(cause: unknown, what: string): ChainError {
  const name = cause instanceof Error ? cause.name : '';
  const code = errorCode(cause) ?? (cause instanceof Error ? errorCode(cause.cause) : undefined);
  if (name === 'AbortError' || name === 'TimeoutError' || (code !== undefined && TIMEOUT_CODES.has(code))) {
    return new ChainError('timeout', `${what}: RPC request timed out`, { cause });
  }
  const reason = code ?? (cause instanceof Error ? cause.message : String(cause));
  return new ChainError('rpc_unavailable', `${what}: RPC server unreachable (${reason})`, { cause });
}

function errorCode(value: unknown): string | undefined {
  if (!isRecord(value)) return undefined;
  const code = value['code'];
  return typeof code === 'string' ? code : undefined;
}

/** Retry-After is either delta-seconds or an HTTP date (RFC 9110 §10.2.3). */
function parseRetryAfter(value: string | null | undefined): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

function describeErr(err: unknown): string {
  return typeof err === 'string' ? err : truncate(JSON.stringify(err) ?? String(err), 300);
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
