import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { PublicKey } from '@solana/web3.js';
import bs58 from 'bs58';
import { sql } from 'kysely';
import type { Db } from '../src/adapters/postgres/index.js';
import type { PlatformChain } from '../src/adapters/solana/index.js';

/**
 * The inactive accounts of `bench/follower.ts`: accounts that exist in Postgres with a wallet and
 * are followed, and never receive anything (nothing of them is on chain). They are numbered
 * (`bfi_<n>`, 1 to N, so a run can grow or shrink them) and written straight into Postgres in
 * batches, with their two token accounts (USDC and native) in `followed_token_accounts`, where the
 * block follower would have put them after deriving them from `follow_queue` (~0.2 ms a wallet:
 * minutes for 1,000,000). Triggers are off while they are written (`session_replication_role =
 * replica`): the queue trigger then adds no `follow_queue` row, and the foreign keys, right by
 * construction, are not checked row by row.
 *
 * Their token accounts are random 32-byte addresses (real ones are derived, which is the cost left
 * out). Their wallets are real ed25519 public keys up to `onCurveUpTo` (the old per-address
 * follower derives each wallet's token account, which needs a key on the curve: it runs over those
 * only), random 32-byte addresses after.
 */
const HANDLE_PREFIX = 'bfi_';
const BATCH = 20_000;

/** Inactive accounts now (numbered 1 to the count). */
export async function inactiveAccounts(db: Db): Promise<number> {
  const { rows } = await sql<{ n: string }>`
    SELECT count(*)::text AS n FROM accounts WHERE handle LIKE ${`${HANDLE_PREFIX}%`}`.execute(db);
  return Number(rows[0]!.n);
}

/** Accounts with a wallet (every one the followers follow). */
export async function accountsWithWallets(db: Db): Promise<number> {
  const { rows } = await sql<{ n: string }>`
    SELECT count(*)::text AS n FROM accounts WHERE wallet_address IS NOT NULL`.execute(db);
  return Number(rows[0]!.n);
}

const randomAddress = () => bs58.encode(randomBytes(32));
const curveAddress = () =>
  new PublicKey(
    generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }).subarray(-32),
  ).toBase58();

/**
 * Grows or shrinks the inactive accounts to `target`, then VACUUM ANALYZE of both tables, so that
 * no autovacuum of a million new rows runs inside a measurement.
 */
export async function resizeInactive(
  db: Db,
  platform: PlatformChain,
  target: number,
  onCurveUpTo: number,
): Promise<void> {
  const current = await inactiveAccounts(db);
  if (target > current) {
    const mints = [platform.usdcMint.toBase58(), platform.nativeMint.toBase58()];
    for (let from = current + 1; from <= target; from += BATCH) {
      const to = Math.min(target, from + BATCH - 1);
      const ids: string[] = [];
      const handles: string[] = [];
      const wallets: string[] = [];
      const tokenAccounts: string[] = [];
      const owners: string[] = [];
      const tokenMints: string[] = [];
      const accountIds: string[] = [];
      for (let n = from; n <= to; n++) {
        const id = randomUUID();
        const wallet = n <= onCurveUpTo ? curveAddress() : randomAddress();
        ids.push(id);
        handles.push(`${HANDLE_PREFIX}${n}`);
        wallets.push(wallet);
        for (const mint of mints) {
          tokenAccounts.push(randomAddress());
          owners.push(wallet);
          tokenMints.push(mint);
          accountIds.push(id);
        }
      }
      await db.transaction().execute(async (trx) => {
        await sql`SET LOCAL session_replication_role = replica`.execute(trx);
        await sql`SET LOCAL statement_timeout = 0`.execute(trx);
        await sql`
          INSERT INTO accounts (id, handle, display_name, wallet_address)
          SELECT id, handle, '', wallet
            FROM unnest(${ids}::uuid[], ${handles}::text[], ${wallets}::text[]) AS t(id, handle, wallet)`.execute(
          trx,
        );
        await sql`
          INSERT INTO followed_token_accounts (token_account, owner, mint, account_id)
          SELECT token_account, owner, mint, account_id
            FROM unnest(${tokenAccounts}::text[], ${owners}::text[], ${tokenMints}::text[], ${accountIds}::uuid[])
                 AS t(token_account, owner, mint, account_id)`.execute(trx);
      });
    }
  } else if (target < current) {
    await db.transaction().execute(async (trx) => {
      await sql`SET LOCAL session_replication_role = replica`.execute(trx);
      await sql`SET LOCAL statement_timeout = 0`.execute(trx);
      await sql`
        CREATE TEMP TABLE dropped ON COMMIT DROP AS
        SELECT id FROM accounts
         WHERE handle LIKE ${`${HANDLE_PREFIX}%`} AND substr(handle, ${HANDLE_PREFIX.length + 1})::int > ${target}`.execute(
        trx,
      );
      await sql`DELETE FROM followed_token_accounts WHERE account_id IN (SELECT id FROM dropped)`.execute(
        trx,
      );
      await sql`DELETE FROM accounts WHERE id IN (SELECT id FROM dropped)`.execute(trx);
    });
  }
  if (target !== current) await sql`VACUUM ANALYZE accounts, followed_token_accounts`.execute(db);
}
