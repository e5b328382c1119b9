import { createJsonPoster } from './json-poster.js';
import { ChainError, classifyRpcFailure, type JsonRpcErrorObject } from './chain-errors.js';

/**
 * A small JSON-RPC 2.0 client over node:http for the hot path (undici's `fetch` cost the payments
 * worker's thread more than the requests themselves: ~0.3 ms a call, and the worker makes one per
 * send batch and per status poll, hundreds a second). web3.js `Connection` wraps every call
 * in superstruct validation and per-request bookkeeping that caps a process far below the ~1,000
 * tx/s the payments worker needs; this client sends the JSON and checks only the fields we read.
 *
 * Every failure, transport or JSON-RPC, is thrown as a ChainError (see chain-errors.ts).
 */

export type Commitment = 'processed' | 'confirmed' | 'finalized';

export interface RpcCall {
  readonly method: string;
  readonly params: readonly unknown[];
}

/** One answer of a batch, in the order of the calls: a result or that call's own failure. */
export type BatchItem<T> = { readonly result: T } | { readonly error: ChainError };

export interface SignatureStatus {
  readonly slot: number;
  /** null when the transaction succeeded; the on-chain error JSON otherwise. */
  readonly err: unknown;
  readonly confirmationStatus: Commitment;
}

export interface SendOptions {
  readonly skipPreflight: boolean;
  /** Bank to simulate against; it must know the transaction's blockhash. */
  readonly preflightCommitment: Commitment;
}

export interface RpcClient {
  call<T>(method: string, params: readonly unknown[]): Promise<T>;
  /**
   * One HTTP request holding a JSON array of calls. A Solana validator refuses request bodies over
   * 50 KiB, so callers keep batches small (about 50 sendTransaction calls).
   */
  batch<T>(calls: readonly RpcCall[]): Promise<Array<BatchItem<T>>>;
  getLatestBlockhash(commitment: Commitment): Promise<{ blockhash: string; lastValidBlockHeight: number }>;
  getBlockHeight(commitment: Commitment): Promise<number>;
  /** Returns the transaction's signature (base58) as the node computed it. */
  sendTransaction(wire: Buffer, options: SendOptions): Promise<string>;
  /** One entry per signature, same order; null for a signature the node has not seen. */
  getSignatureStatuses(
    signatures: readonly string[],
    options?: { searchTransactionHistory?: boolean },
  ): Promise<Array<SignatureStatus | null>>;
  /**
   * Caps the HTTP requests this client sends per second (0: no cap), spacing them evenly: a
   * public RPC answers 429 past its limit. Set once the cluster is known.
   */
  limitRate(requestsPerSecond: number): void;
}

export interface RpcClientOptions {
  /** Per HTTP request, connect to last body byte. @defaultValue 10_000 */
  readonly timeoutMs?: number;
}

/** Solana's own limit for one getSignatureStatuses call. */
export const MAX_SIGNATURES_PER_STATUS_CALL = 256;

export function createRpcClient(url: string, { timeoutMs = 10_000 }: RpcClientOptions = {}): RpcClient {
  let nextId = 1;

  // Kept-alive connections: a status poll every few milliseconds must not open a socket each time.
  const poster = createJsonPoster(new URL(url).protocol === 'https:' ? 'https:' : 'http:');

  // Even spacing: each request takes the next free slot, 1/rate apart.
  let spacingMs = 0;
  let nextSlotAt = 0;
  async function takeSlot(): Promise<void> {
    if (spacingMs === 0) return;
    const now = Date.now();
    const at = Math.max(now, nextSlotAt);
    nextSlotAt = at + spacingMs;
    if (at > now) await new Promise((resolve) => setTimeout(resolve, at - now));
  }

  /** Posts a body and returns the parsed JSON; throws ChainError for transport and HTTP failures. */
  async function post(body: unknown, what: string): Promise<unknown> {
    await takeSlot();
    let text: string;
    try {
      const response = await poster.post(url, JSON.stringify(body), { timeoutMs });
      text = response.text;
      if (response.status < 200 || response.status > 299) {
        const retryAfter = response.headers['retry-after'] ?? null;
        throw classifyRpcFailure({ source: 'http', status: response.status, retryAfter, body: text }, what);
      }
    } catch (error) {
      if (error instanceof ChainError) throw error;
      throw classifyRpcFailure({ source: 'network', cause: error }, what);
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw classifyRpcFailure({ source: 'malformed', detail: 'body is not JSON' }, what);
    }
  }

  async function call<T>(method: string, params: readonly unknown[]): Promise<T> {
    const id = nextId++;
    const body = await post({ jsonrpc: '2.0', id, method, params }, method);
    const item = readResponse(body, method);
    if ('error' in item) throw item.error;
    return item.result as T;
  }

  async function batch<T>(calls: readonly RpcCall[]): Promise<Array<BatchItem<T>>> {
    if (calls.length === 0) return [];
    const firstId = nextId;
    nextId += calls.length;
    const requests = calls.map((c, i) => ({
      jsonrpc: '2.0',
      id: firstId + i,
      method: c.method,
      params: c.params,
    }));
    const body = await post(requests, 'batch');
    // A server that cannot parse the batch answers one error object instead of an array.
    if (!Array.isArray(body)) {
      const single = readResponse(body, 'batch');
      throw 'error' in single
        ? single.error
        : classifyRpcFailure({ source: 'malformed', detail: 'batch answered with a single result' }, 'batch');
    }
    const byId = new Map<unknown, unknown>();
    for (const entry of body) if (isRecord(entry)) byId.set(entry['id'], entry);
    return calls.map((c, i) => {
      const entry = byId.get(firstId + i);
      if (entry === undefined) {
        return { error: classifyRpcFailure({ source: 'malformed', detail: 'no answer in batch' }, c.method) };
      }
      return readResponse(entry, c.method) as BatchItem<T>;
    });
  }

  async function getSignatureStatuses(
    signatures: readonly string[],
    options: { searchTransactionHistory?: boolean } = {},
  ): Promise<Array<SignatureStatus | null>> {
    const config = { searchTransactionHistory: options.searchTransactionHistory ?? false };
    // Separate requests rather than one batch: four chunks of 256 signatures would pass the
    // validator's 50 KiB request body limit.
    const chunks: string[][] = [];
    for (let i = 0; i < signatures.length; i += MAX_SIGNATURES_PER_STATUS_CALL) {
      chunks.push(signatures.slice(i, i + MAX_SIGNATURES_PER_STATUS_CALL));
    }
    const answers = await Promise.all(
      chunks.map(async (chunk) => {
        const answer = await call<unknown>('getSignatureStatuses', [chunk, config]);
        return readStatuses(answer, chunk.length);
      }),
    );
    return answers.flat();
  }

  return {
    call,
    batch,
    limitRate: (requestsPerSecond) => {
      spacingMs = requestsPerSecond > 0 ? 1000 / requestsPerSecond : 0;
    },
    async getLatestBlockhash(commitment) {
      const answer = await call<unknown>('getLatestBlockhash', [{ commitment }]);
      const value = isRecord(answer) ? answer['value'] : undefined;
      if (
        !isRecord(value) ||
        typeof value['blockhash'] !== 'string' ||
        typeof value['lastValidBlockHeight'] !== 'number'
      ) {
        throw malformed('getLatestBlockhash', 'value lacks blockhash or lastValidBlockHeight');
      }
      return { blockhash: value['blockhash'], lastValidBlockHeight: value['lastValidBlockHeight'] };
    },
    async getBlockHeight(commitment) {
      const height = await call<unknown>('getBlockHeight', [{ commitment }]);
      if (typeof height !== 'number') throw malformed('getBlockHeight', 'result is not a number');
      return height;
    },
    async sendTransaction(wire, { skipPreflight, preflightCommitment }) {
      const signature = await call<unknown>('sendTransaction', [
        wire.toString('base64'),
        { encoding: 'base64', skipPreflight, preflightCommitment },
      ]);
      if (typeof signature !== 'string') throw malformed('sendTransaction', 'result is not a signature');
      return signature;
    },
    getSignatureStatuses,
  };
}

/** Reads one JSON-RPC response object into a result or a classified error. */
function readResponse(body: unknown, what: string): BatchItem<unknown> {
  if (!isRecord(body)) return { error: malformed(what, 'response is not an object') };
  const error = body['error'];
  if (error !== undefined && error !== null) {
    if (!isRecord(error) || typeof error['code'] !== 'number') {
      return { error: malformed(what, 'error object lacks a numeric code') };
    }
    const rpcError: JsonRpcErrorObject = {
      code: error['code'],
      message: typeof error['message'] === 'string' ? error['message'] : '',
      data: error['data'],
    };
    return { error: classifyRpcFailure({ source: 'rpc', error: rpcError }, what) };
  }
  if (!('result' in body)) return { error: malformed(what, 'response has neither result nor error') };
  return { result: body['result'] };
}

/**
 * The statuses of a getSignatureStatuses answer asked for `count` signatures (a call's result, or
 * one entry of a batch): one per signature, null where the node has not seen it.
 */
export function readStatuses(answer: unknown, count: number): Array<SignatureStatus | null> {
  const value = isRecord(answer) ? answer['value'] : undefined;
  if (!Array.isArray(value) || value.length !== count) {
    throw malformed('getSignatureStatuses', 'value is not an array of one entry per signature');
  }
  return value.map(readStatus);
}

function readStatus(entry: unknown): SignatureStatus | null {
  if (entry === null) return null;
  if (!isRecord(entry) || typeof entry['slot'] !== 'number') {
    throw malformed('getSignatureStatuses', 'status entry lacks a slot');
  }
  const reported = entry['confirmationStatus'];
  // Nodes older than 1.5 omit confirmationStatus; `confirmations: null` then means rooted.
  const confirmationStatus: Commitment =
    reported === 'processed' || reported === 'confirmed' || reported === 'finalized'
      ? reported
      : entry['confirmations'] === null
        ? 'finalized'
        : 'processed';
  return { slot: entry['slot'], err: entry['err'] ?? null, confirmationStatus };
}

function malformed(what: string, detail: string): ChainError {
  return classifyRpcFailure({ source: 'malformed', detail }, what);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
