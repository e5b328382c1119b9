/**
 * A webhook receiver: verifies each delivery's signature, answers at once, then handles each
 * event once (deliveries can repeat: a retry, a replay).
 *
 *   LEDGERFEED_WEBHOOK_SECRET=whsec_... PORT=8080 node --import tsx examples/webhook-receiver.ts
 */
import { createServer } from 'node:http';
import { LedgerfeedError, verifyWebhook, type WebhookEvent } from '@ledgerfeed/client';

const secret = process.env.LEDGERFEED_WEBHOOK_SECRET;
if (!secret) {
  console.error('failed: set LEDGERFEED_WEBHOOK_SECRET to the secret the webhook was created with');
  process.exit(1);
}
const port = Number(process.env.PORT ?? 8080);

// Event ids already handled. In production this is a table with a unique key on the event id
// (insert ... on conflict do nothing), so a restart or a second instance still dedupes.
const seen = new Set<string>();

function handle(event: WebhookEvent): void {
  if (seen.has(event.id)) {
    console.log(`duplicate ${event.sequence} ${event.type} ${event.id} ignored`);
    return;
  }
  seen.add(event.id);
  console.log(`${event.sequence} ${event.type}`);
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    let event: WebhookEvent;
    try {
      // The raw bytes, not re-serialised JSON: the signature covers the body exactly as sent.
      event = verifyWebhook(secret, req.headers, Buffer.concat(chunks));
    } catch (error) {
      const refused = error instanceof LedgerfeedError;
      res.writeHead(refused ? 400 : 500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: refused ? error.error : 'internal', message: String(error) }));
      if (refused) console.log(`refused: ${error.message}`);
      return;
    }
    // 2xx first, work after: a slow handler must not make the delivery time out (10 s) and repeat.
    res.writeHead(204).end();
    handle(event);
  });
});

server.listen(port, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${port}`));

// Stop taking connections and let requests in hand finish; idle kept-alive ones are closed.
const stop = (signal: string) => {
  console.log(`${signal}: stopping`);
  server.close(() => process.exit(0));
};
process.once('SIGTERM', () => stop('SIGTERM'));
process.once('SIGINT', () => stop('SIGINT'));
