/**
 * The webhook receiver of `bench/webhooks.ts`, in a child process of its own (as a real receiver
 * would be: its HTTP server costs the service's event loop nothing). It answers every POST to
 * /hook/<endpoint> with 204 at once, verifies nothing (the tests verify signatures; this measures
 * delivery), and keeps per endpoint the sequences received in order and, per delivery, the time
 * from the event's `created_at` (when its change committed) to now.
 *
 * Driven over IPC by `startReceiver` (the parent): `ready` with its port, then `report` on demand.
 */
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { forkBenchChild } from './bench-child.js';

export interface ReceiverReport {
  /** Deliveries received (each POST, duplicates included). */
  received: number;
  /** Deliveries whose event id the endpoint had already received. */
  duplicates: number;
  /** Endpoints whose sequences did not strictly increase (delivered out of order). */
  outOfOrder: string[];
  /** ms from the event's created_at to its receipt, for events created at or after `since`. */
  latenciesMs: number[];
  /** Wall-clock ms of the last receipt. */
  lastAt: number;
}

export interface Receiver {
  port: number;
  report(sinceMs: number): Promise<ReceiverReport>;
  close(): Promise<void>;
}

type ToChild = { type: 'report'; sinceMs: number };
type FromChild = { type: 'ready'; port: number } | { type: 'report'; report: ReceiverReport };

export async function startReceiver(): Promise<Receiver> {
  const child = forkBenchChild<FromChild>(import.meta.url);
  const { port } = await child.ask(undefined, 'ready');
  return {
    port,
    report: async (sinceMs) =>
      (await child.ask({ type: 'report', sinceMs } satisfies ToChild, 'report')).report,
    close: child.close,
  };
}

function runChild(): void {
  const lastSequence = new Map<string, number>();
  const seen = new Set<string>();
  const outOfOrder = new Set<string>();
  const deliveries: Array<{ createdMs: number; latencyMs: number }> = [];
  let received = 0;
  let duplicates = 0;
  let lastAt = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      response.writeHead(204).end();
      const now = Date.now();
      const endpoint = request.url ?? '';
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        id: string;
        sequence: number;
        created_at: string;
      };
      received++;
      lastAt = now;
      const key = `${endpoint} ${event.id}`;
      const last = lastSequence.get(endpoint) ?? 0;
      if (seen.has(key)) {
        duplicates++; // sent again after a worker stopped mid-delivery: allowed, never out of order
      } else if (event.sequence <= last) {
        outOfOrder.add(endpoint);
      }
      seen.add(key);
      lastSequence.set(endpoint, Math.max(last, event.sequence));
      const createdMs = Date.parse(event.created_at);
      deliveries.push({ createdMs, latencyMs: now - createdMs });
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    process.send!({
      type: 'ready',
      port: typeof address === 'object' && address ? address.port : 0,
    } satisfies FromChild);
  });
  process.on('message', (message: ToChild) => {
    if (message.type !== 'report') return;
    const report: ReceiverReport = {
      received,
      duplicates,
      outOfOrder: [...outOfOrder],
      latenciesMs: deliveries.filter((d) => d.createdMs >= message.sinceMs).map((d) => d.latencyMs),
      lastAt,
    };
    process.send!({ type: 'report', report } satisfies FromChild);
  });
  process.on('disconnect', () => {
    server.close();
    server.closeAllConnections();
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) runChild();
