import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook } from '../../clients/typescript/src/webhooks.js';

/** One request as the receiver saw it. */
export interface ReceivedRequest {
  /** ms since the receiver started. */
  at: number;
  headers: http.IncomingHttpHeaders;
  rawBody: string;
  event: { id: string; type: string; created_at: string; sequence: number; data: Record<string, unknown> };
  /** The status answered; undefined while stalled or when the handler wrote its own answer. */
  status?: number;
}

/**
 * What to do with a request: answer a status, hold it unanswered ('stall': the sender times out or
 * is killed), or write the response yourself.
 */
export type ReceiverAnswer = number | 'stall' | ((response: http.ServerResponse) => void);

export interface WebhookReceiver {
  url: string;
  requests: ReceivedRequest[];
  /** Sequences answered 2xx, in arrival order. */
  delivered(): number[];
  answer: (request: ReceivedRequest) => ReceiverAnswer;
  close(): Promise<void>;
}

/** A webhook receiver on 127.0.0.1, answering 200 unless told otherwise. */
export async function startWebhookReceiver(
  answer: (request: ReceivedRequest) => ReceiverAnswer = () => 200,
): Promise<WebhookReceiver> {
  const started = Date.now();
  const requests: ReceivedRequest[] = [];
  const receiver: WebhookReceiver = {
    url: '',
    requests,
    answer,
    delivered: () =>
      requests
        .filter((request) => request.status !== undefined && request.status >= 200 && request.status < 300)
        .map((request) => request.event.sequence),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const request: ReceivedRequest = {
        at: Date.now() - started,
        headers: req.headers,
        rawBody,
        event: JSON.parse(rawBody) as ReceivedRequest['event'],
      };
      requests.push(request);
      const decided = receiver.answer(request);
      if (decided === 'stall') return;
      if (typeof decided === 'function') return decided(res);
      request.status = decided;
      res.writeHead(decided, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return receiver;
}

/**
 * The receiver's side of the signature, as the typed client checks it (verifyWebhook): one `v1`
 * equals HMAC-SHA256(secret, "<t>.<raw body>") and `t` is within 300 s of now.
 */
export function verifiedWith(
  secret: string,
  header: string | string[] | undefined,
  rawBody: string,
): boolean {
  try {
    verifyWebhook(secret, { 'ledgerfeed-signature': header }, rawBody);
    return true;
  } catch {
    return false;
  }
}

/** How many `v1=` entries the header carries. */
export function signatureCount(header: string | string[] | undefined): number {
  return typeof header === 'string' ? header.split(',').filter((part) => part.startsWith('v1=')).length : 0;
}
