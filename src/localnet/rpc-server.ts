import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Commitment, LocalChain } from './chain.js';
import { RPC_CODES, RpcError } from './rpc-error.js';
import { createRpcMethods, READ_METHODS } from './rpc-methods.js';
import type { TransactionRecord } from './transaction-store.js';

/** Largest JSON-RPC body accepted: a batch of a few thousand transactions. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

interface JsonRpcRequest {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  params?: unknown;
}

type Dispatch = ((request: unknown) => object) & {
  /** What this localnet has served: HTTP requests and JSON-RPC calls by method. */
  readonly traffic?: RpcTraffic;
};

/**
 * The localnet's own count of what it served (`localnet_traffic`): how many HTTP requests and
 * JSON-RPC calls, by method. The write-cost bench reads it to count RPC messages per paid post.
 */
export interface RpcTraffic {
  httpRequests: number;
  calls: Record<string, number>;
}

/** Answers one JSON-RPC request object; never throws. */
export function createDispatcher(chain: LocalChain, options: { plainValidator?: boolean } = {}): Dispatch {
  const methods = createRpcMethods(chain);
  const traffic: RpcTraffic = { httpRequests: 0, calls: {} };
  // Not a read of the chain: refused to pages (browserRefusal) like the other localnet_ methods.
  methods.localnet_traffic = () => ({ httpRequests: traffic.httpRequests, calls: { ...traffic.calls } });
  // As a plain validator it serves only the standard methods: clients take it for a validator we
  // do not control (no localnet_getInfo, no localnet_setAccount), as in a compose deployment.
  if (options.plainValidator) {
    for (const name of Object.keys(methods)) if (name.startsWith('localnet_')) delete methods[name];
  }
  const dispatch = (raw: unknown): object => {
    const request = (raw ?? {}) as JsonRpcRequest;
    const id = request.id ?? null;
    if (
      typeof raw !== 'object' ||
      raw === null ||
      request.jsonrpc !== '2.0' ||
      typeof request.method !== 'string'
    ) {
      return { jsonrpc: '2.0', id, error: { code: RPC_CODES.invalidRequest, message: 'Invalid request' } };
    }
    const handler = Object.hasOwn(methods, request.method) ? methods[request.method] : undefined;
    if (handler) traffic.calls[request.method] = (traffic.calls[request.method] ?? 0) + 1;
    if (!handler)
      return { jsonrpc: '2.0', id, error: { code: RPC_CODES.methodNotFound, message: 'Method not found' } };
    const params = request.params === undefined ? [] : request.params;
    if (!Array.isArray(params)) {
      return {
        jsonrpc: '2.0',
        id,
        error: { code: RPC_CODES.invalidParams, message: 'Invalid params: expected an array' },
      };
    }
    try {
      return { jsonrpc: '2.0', id, result: handler(params) };
    } catch (error) {
      if (error instanceof RpcError) {
        return {
          jsonrpc: '2.0',
          id,
          error: {
            code: error.code,
            message: error.message,
            ...(error.data === undefined ? {} : { data: error.data }),
          },
        };
      }
      return {
        jsonrpc: '2.0',
        id,
        error: { code: RPC_CODES.internal, message: `Internal error: ${(error as Error).message}` },
      };
    }
  };
  return Object.assign(dispatch, { traffic });
}

const PARSE_ERROR = {
  jsonrpc: '2.0',
  id: null,
  error: { code: RPC_CODES.parseError, message: 'Parse error' },
};

function parseBody(body: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(body) };
  } catch {
    return { ok: false };
  }
}

/** Answers a parsed HTTP body: one request or a batch (array), as JSON-RPC 2.0 defines. */
function answer(dispatch: Dispatch, parsed: unknown): object {
  if (Array.isArray(parsed)) {
    if (parsed.length === 0) {
      return {
        jsonrpc: '2.0',
        id: null,
        error: { code: RPC_CODES.invalidRequest, message: 'Invalid request' },
      };
    }
    return parsed.map(dispatch);
  }
  return dispatch(parsed);
}

/**
 * Why a request may not run, or undefined. Any web page the developer visits can POST to the
 * localnet: a `text/plain` (or type-less) body needs no CORS preflight, and a JSON one is let
 * through by our preflight answer, which allows every origin so block explorers can read. So a
 * call that changes the chain (anything but READ_METHODS: an airdrop, localnet_setAccount, a
 * transaction) runs only when the request is JSON and carries no `Origin`: browsers put one on
 * every POST (same-origin ones and DNS-rebound ones too), web3.js and our RPC client in Node never
 * do. No origin is allowed: the dashboards never call the localnet from the browser (the dev faucet
 * airdrops from the API process). Reads stay open to any origin. A batch with one such call is
 * refused whole, before anything in it runs.
 */
function browserRefusal(
  headers: http.IncomingHttpHeaders,
  parsed: unknown,
): { status: number; message: string } | undefined {
  const calls: unknown[] = Array.isArray(parsed) ? parsed : [parsed];
  if (calls.every(changesNothing)) return undefined;
  // 415 and 403 tell an HTTP client why; the JSON-RPC error body tells a JSON-RPC client. Not 200:
  // nothing ran, and web3.js reports a non-2xx answer as a failed call rather than a result.
  if (!JSON_CONTENT_TYPE.test(headers['content-type'] ?? '')) {
    return {
      status: 415,
      message: 'State-changing methods need Content-Type: application/json (reads accept any body type)',
    };
  }
  if (headers.origin !== undefined) {
    return {
      status: 403,
      message: `State-changing methods are refused to web pages (Origin: ${headers.origin.slice(0, 100)}); reads are open`,
    };
  }
  return undefined;
}

const JSON_CONTENT_TYPE = /^\s*application\/json\s*(;|$)/i;

/** A call that cannot change the chain: a read, or something the dispatcher refuses as invalid. */
function changesNothing(call: unknown): boolean {
  if (typeof call !== 'object' || call === null) return true;
  const method = (call as JsonRpcRequest).method;
  return typeof method !== 'string' || READ_METHODS.has(method);
}

/** The refusal as JSON-RPC: one error, or one per request of a batch (same ids, same order). */
function refusalBody(parsed: unknown, message: string): object {
  const error = (id: unknown) => ({
    jsonrpc: '2.0',
    id: id ?? null,
    error: { code: RPC_CODES.refusedToBrowser, message },
  });
  const idOf = (call: unknown) =>
    typeof call === 'object' && call !== null ? (call as JsonRpcRequest).id : undefined;
  return Array.isArray(parsed) ? parsed.map((call) => error(idOf(call))) : error(idOf(parsed));
}

export function createHttpServer(dispatch: Dispatch): http.Server {
  const server = http.createServer((req, res) => {
    res.setHeader('access-control-allow-origin', '*');
    res.setHeader('access-control-allow-headers', 'content-type, solana-client');
    if (req.method === 'OPTIONS') return void res.writeHead(204).end();
    if (req.method === 'GET' && req.url === '/health') return void res.writeHead(200).end('ok');
    if (req.method !== 'POST') {
      return void res.writeHead(405, { 'content-type': 'text/plain' }).end('Use POST with a JSON-RPC body');
    }
    if (dispatch.traffic) dispatch.traffic.httpRequests++;
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        res.writeHead(413).end();
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (res.headersSent) return;
      const send = (status: number, body: object) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      const parsed = parseBody(Buffer.concat(chunks).toString('utf8'));
      if (!parsed.ok) return void send(200, PARSE_ERROR);
      const refused = browserRefusal(req.headers, parsed.value);
      if (refused) return void send(refused.status, refusalBody(parsed.value, refused.message));
      send(200, answer(dispatch, parsed.value));
    });
  });
  // Clients keep sockets alive between batches; closing idle ones after Node's default 5 s makes a
  // client that paused a moment reuse a dead socket (ECONNRESET). Validators keep them longer too.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  return server;
}

interface SignatureSubscription {
  id: number;
  socket: WebSocket;
  signature: string;
  commitment: Commitment;
}

/**
 * The PubSub side: signatureSubscribe (one notification when the transaction reaches the
 * commitment, then the subscription ends, as on a validator) and slotSubscribe.
 */
export function attachPubSub(wss: WebSocketServer, chain: LocalChain): void {
  let nextId = 1;
  const slotSubscribers = new Map<number, WebSocket>();
  const signatureSubscriptions = new Map<number, SignatureSubscription>();

  const send = (socket: WebSocket, message: object) => {
    if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message));
  };
  const notifyIfReached = (subscription: SignatureSubscription): void => {
    const status = chain.status(subscription.signature);
    if (!status || RANK[status.confirmationStatus] < RANK[subscription.commitment]) return;
    signatureSubscriptions.delete(subscription.id);
    send(subscription.socket, {
      jsonrpc: '2.0',
      method: 'signatureNotification',
      params: {
        result: { context: { slot: chain.slot }, value: { err: status.err } },
        subscription: subscription.id,
      },
    });
  };

  chain.on('slot', (slot: number) => {
    for (const [id, socket] of slotSubscribers) {
      send(socket, {
        jsonrpc: '2.0',
        method: 'slotNotification',
        params: {
          result: {
            parent: chain.blocks.blockAtOrBelow(slot - 1),
            root: Math.max(0, chain.slotAt('finalized')),
            slot,
          },
          subscription: id,
        },
      });
    }
    for (const subscription of signatureSubscriptions.values()) notifyIfReached(subscription);
  });
  // `confirmed` comes when a write puts the transaction on disk, not with a slot.
  chain.on('durable', () => {
    for (const subscription of signatureSubscriptions.values()) notifyIfReached(subscription);
  });
  chain.on('landed', (record: TransactionRecord) => {
    for (const subscription of signatureSubscriptions.values()) {
      if (subscription.signature === record.signature) notifyIfReached(subscription);
    }
  });

  wss.on('connection', (socket) => {
    socket.on('message', (data: Buffer) => {
      let request: JsonRpcRequest;
      try {
        request = JSON.parse(data.toString('utf8')) as JsonRpcRequest;
      } catch {
        return send(socket, {
          jsonrpc: '2.0',
          id: null,
          error: { code: RPC_CODES.parseError, message: 'Parse error' },
        });
      }
      const id = request.id ?? null;
      const params = Array.isArray(request.params) ? request.params : [];
      const reply = (result: unknown) => send(socket, { jsonrpc: '2.0', id, result });
      // A socket ends only its own subscriptions: ids are sequential and any web page may connect
      // (WebSockets know no CORS), so otherwise a page could end the service's signature waits.
      const ownSlot = (subscription: number) => slotSubscribers.get(subscription) === socket;
      const ownSignature = (subscription: number) =>
        signatureSubscriptions.get(subscription)?.socket === socket;
      switch (request.method) {
        case 'slotSubscribe': {
          const subscription = nextId++;
          slotSubscribers.set(subscription, socket);
          return reply(subscription);
        }
        case 'slotUnsubscribe': {
          const subscription = Number(params[0]);
          return reply(ownSlot(subscription) && slotSubscribers.delete(subscription));
        }
        case 'signatureSubscribe': {
          const signature: unknown = params[0];
          if (typeof signature !== 'string') {
            return send(socket, {
              jsonrpc: '2.0',
              id,
              error: { code: RPC_CODES.invalidParams, message: 'Invalid params' },
            });
          }
          const config = (params[1] ?? {}) as { commitment?: Commitment };
          const commitment = config.commitment && config.commitment in RANK ? config.commitment : 'finalized';
          const subscription: SignatureSubscription = { id: nextId++, socket, signature, commitment };
          signatureSubscriptions.set(subscription.id, subscription);
          reply(subscription.id);
          return notifyIfReached(subscription);
        }
        case 'signatureUnsubscribe': {
          const subscription = Number(params[0]);
          return reply(ownSignature(subscription) && signatureSubscriptions.delete(subscription));
        }
        default:
          return send(socket, {
            jsonrpc: '2.0',
            id,
            error: { code: RPC_CODES.methodNotFound, message: 'Method not found' },
          });
      }
    });
    socket.on('close', () => {
      for (const [id, subscriber] of slotSubscribers) if (subscriber === socket) slotSubscribers.delete(id);
      for (const [id, subscription] of signatureSubscriptions) {
        if (subscription.socket === socket) signatureSubscriptions.delete(id);
      }
    });
  });
}

const RANK: Record<Commitment, number> = { processed: 0, confirmed: 1, finalized: 2 };

/**
 * Binds HTTP on `port` and the WebSocket on `port + 1` (where web3.js looks for it). Port 0 picks
 * a free pair.
 */
export async function listenPair(
  httpServer: http.Server,
  host: string,
  port: number,
): Promise<{ port: number; wss: WebSocketServer }> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const httpPort = port === 0 ? 20_000 + Math.floor(Math.random() * 40_000) : port;
    try {
      await listen(httpServer, host, httpPort);
    } catch (error) {
      if (port !== 0) throw error;
      continue;
    }
    const wss = new WebSocketServer({ host, port: httpPort + 1 });
    const ready = await new Promise<Error | undefined>((resolve) => {
      wss.once('listening', () => resolve(undefined));
      wss.once('error', resolve);
    });
    if (!ready) return { port: (httpServer.address() as AddressInfo).port, wss };
    await new Promise((resolve) => httpServer.close(resolve));
    if (port !== 0) throw ready;
  }
  throw new Error('no free pair of ports for the localnet');
}

function listen(server: http.Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
