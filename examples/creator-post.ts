/**
 * A creator posts (a paid write: $1 USDC on Solana) and follows the payment until it is finalized,
 * the point after which the chain can no longer roll it back.
 *
 *   LEDGERFEED_API_KEY=lf_live_... node --import tsx examples/creator-post.ts "Hello, paid world"
 */
import { createLedgerfeedClient, LedgerfeedError } from '@ledgerfeed/client';

const baseUrl = process.env.LEDGERFEED_URL ?? 'http://localhost:3000';
const apiKey = process.env.LEDGERFEED_API_KEY;
const content = process.argv[2] ?? `Posted from examples/creator-post.ts at ${new Date().toISOString()}`;

async function main(): Promise<void> {
  if (!apiKey) throw new Error('set LEDGERFEED_API_KEY to an API key of the posting account');
  const client = createLedgerfeedClient({ baseUrl, apiKey });

  // The client puts one Idempotency-Key on this write and reuses it on every retry, so a lost
  // answer never charges twice. Pass { idempotencyKey } of your own to retry across restarts.
  const post = await client.createPost({ type: 'post', content });
  console.log(`post ${post.id}`);
  console.log(`swap_tx ${post.swap_tx}`);
  // Each state as it comes: pending (sent), confirmed (executed; a fork could still drop it),
  // finalized (final). waitForPayment throws `payment_failed` if the chain refused it.
  await client.waitForPayment(post.swap_tx, {
    until: 'finalized',
    timeoutMs: 120_000,
    onState: (payment) => console.log(`state ${payment.status}`),
  });
}

main().catch((error: unknown) => {
  // A LedgerfeedError carries the API's machine-readable `error` (insufficient_balance, ...).
  if (error instanceof LedgerfeedError) console.error(`failed: ${error.error}: ${error.message}`);
  else console.error(`failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
