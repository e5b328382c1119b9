import { generateKeyPairSync } from 'node:crypto';
import { PublicKey } from '@solana/web3.js';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { followWallets } from '../src/app/indexer/wallet-follower.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

/**
 * A deployment with more user wallets than Postgres takes parameters in one statement (65,535):
 * the follower read every address's cursor in one `IN (...)` list, so its rounds failed for good
 * from the 65,536th account on.
 */
const WALLETS = 70_000;

let env: TestEnv;

beforeAll(async () => {
  env = await openTestEnv({}, { chain: true });
  await env.app.bootstrapChain();
  // Real ed25519 public keys (on the curve), as custodial wallets are: the follower derives
  // each one's token account address.
  const wallets = Array.from({ length: WALLETS }, () =>
    new PublicKey(
      generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }).subarray(-32),
    ).toBase58(),
  );
  await sql`
    INSERT INTO accounts (handle, display_name, wallet_address)
    SELECT 'scale_' || n, '', wallet
      FROM unnest(${wallets}::text[]) WITH ORDINALITY AS w(wallet, n)`.execute(env.app.db);
}, 120_000);
afterAll(async () => {
  await env?.close();
});

test(
  `a round follows ${WALLETS.toLocaleString('en')} user wallets and the platform's`,
  { timeout: 300_000 },
  async () => {
    const round = await followWallets(env.app, { addressesPerBatch: 1_000 });
    expect(round.addresses).toBeGreaterThan(WALLETS);
    expect(round.unexplained).toBe(0);
  },
);
