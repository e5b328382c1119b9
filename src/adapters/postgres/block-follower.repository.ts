import { sql, type Transaction } from 'kysely';
import type { Database } from './database.js';
import type { Db } from './db.js';
import { releaseHeldCreditsSql } from './ledger.repository.js';

/** A block the follower has read: where it is and what it follows. */
export interface BlockRef {
  slot: number;
  blockhash: string;
}

export interface FollowedBlockRow extends BlockRef {
  parentSlot: number;
  previousBlockhash: string;
}

/** A token account we own, as the follower resolves a hit on it. */
export interface FollowedTokenAccount {
  tokenAccount: string;
  owner: string;
  mint: string;
  accountId: string;
}

/** A credit of a block's deposit to one of our users' token accounts. */
export interface DepositCreditRow {
  signature: string;
  tokenAccount: string;
  accountId: string;
  amount: bigint;
  movementId: string;
  slot: number;
  blockhash: string;
}

type Executor = Db | Transaction<Database>;

export async function readBlockCursor(db: Executor): Promise<BlockRef | null> {
  const { rows } = await sql<{ slot: bigint; blockhash: string }>`
    SELECT slot, blockhash FROM block_follower_cursor WHERE id = 1`.execute(db);
  const row = rows[0];
  return row ? { slot: Number(row.slot), blockhash: row.blockhash } : null;
}

/**
 * Moves the cursor from `from` to `to`, only if it still is at `from` (null: there is no cursor
 * yet). False when another follower moved it meanwhile: the caller's transaction must roll back.
 */
export async function moveBlockCursor(
  trx: Transaction<Database>,
  from: BlockRef | null,
  to: BlockRef,
): Promise<boolean> {
  const result = from
    ? await sql`
        UPDATE block_follower_cursor SET slot = ${to.slot}, blockhash = ${to.blockhash}, updated_at = now()
         WHERE id = 1 AND slot = ${from.slot} AND blockhash = ${from.blockhash}`.execute(trx)
    : await sql`
        INSERT INTO block_follower_cursor (slot, blockhash) VALUES (${to.slot}, ${to.blockhash})
        ON CONFLICT DO NOTHING`.execute(trx);
  return Number(result.numAffectedRows ?? 0n) === 1;
}

/** Records the blocks read (their parents are what a fork is walked back over). */
export async function insertFollowedBlocks(
  trx: Transaction<Database>,
  blocks: readonly FollowedBlockRow[],
): Promise<void> {
  if (blocks.length === 0) return;
  await sql`
    INSERT INTO followed_blocks (slot, blockhash, parent_slot, previous_blockhash)
    SELECT * FROM unnest(${blocks.map((b) => b.slot)}::bigint[], ${blocks.map((b) => b.blockhash)}::text[],
                         ${blocks.map((b) => b.parentSlot)}::bigint[], ${blocks.map((b) => b.previousBlockhash)}::text[])
    ON CONFLICT (slot) DO UPDATE
      SET blockhash = excluded.blockhash, parent_slot = excluded.parent_slot,
          previous_blockhash = excluded.previous_blockhash`.execute(trx);
}

export async function followedBlock(db: Executor, slot: number): Promise<FollowedBlockRow | null> {
  const { rows } = await sql<{
    slot: bigint;
    blockhash: string;
    parent_slot: bigint;
    previous_blockhash: string;
  }>`
    SELECT slot, blockhash, parent_slot, previous_blockhash FROM followed_blocks WHERE slot = ${slot}`.execute(
    db,
  );
  const row = rows[0];
  return row
    ? {
        slot: Number(row.slot),
        blockhash: row.blockhash,
        parentSlot: Number(row.parent_slot),
        previousBlockhash: row.previous_blockhash,
      }
    : null;
}

export async function deleteFollowedBlock(trx: Transaction<Database>, slot: number): Promise<void> {
  await sql`DELETE FROM followed_blocks WHERE slot = ${slot}`.execute(trx);
}

/** Forgets blocks far behind finalized (no fork reaches them), keeping the newest below it. */
export async function pruneFollowedBlocks(db: Db, belowSlot: number): Promise<void> {
  await sql`DELETE FROM followed_blocks WHERE slot < ${belowSlot}`.execute(db);
}

/** Wallets whose token accounts are not derived yet (the trigger queues every wallet set). */
export async function queuedWallets(
  db: Db,
  limit: number,
): Promise<Array<{ wallet: string; accountId: string }>> {
  const { rows } = await sql<{ wallet_address: string; account_id: string }>`
    SELECT wallet_address, account_id FROM follow_queue ORDER BY wallet_address LIMIT ${limit}`.execute(db);
  return rows.map((row) => ({ wallet: row.wallet_address, accountId: row.account_id }));
}

/** Stores derived token accounts and takes their wallets off the queue, together. */
export async function addFollowedTokenAccounts(
  db: Db,
  accounts: readonly FollowedTokenAccount[],
  wallets: readonly string[],
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    if (accounts.length > 0) {
      await sql`
        INSERT INTO followed_token_accounts (token_account, owner, mint, account_id)
        SELECT * FROM unnest(${accounts.map((a) => a.tokenAccount)}::text[], ${accounts.map((a) => a.owner)}::text[],
                             ${accounts.map((a) => a.mint)}::text[], ${accounts.map((a) => a.accountId)}::uuid[])
        ON CONFLICT (token_account) DO NOTHING`.execute(trx);
    }
    await sql`DELETE FROM follow_queue WHERE wallet_address = ANY(${wallets}::text[])`.execute(trx);
  });
}

/**
 * Token accounts stored after `afterSeq` (keyset order), `limit` at a time: the follower's start
 * loads them all, each round the few another process derived.
 */
export async function tokenAccountsAfter(
  db: Db,
  afterSeq: bigint,
  limit: number,
): Promise<Array<{ tokenAccount: string; seq: bigint }>> {
  const { rows } = await sql<{ token_account: string; seq: bigint }>`
    SELECT token_account, seq FROM followed_token_accounts WHERE seq > ${afterSeq} ORDER BY seq LIMIT ${limit}`.execute(
    db,
  );
  return rows.map((row) => ({ tokenAccount: row.token_account, seq: row.seq }));
}

/** Which of `tokenAccounts` are ours, with their owner (hits of the in-memory set resolved). */
export async function resolveTokenAccounts(
  db: Db,
  tokenAccounts: readonly string[],
): Promise<FollowedTokenAccount[]> {
  if (tokenAccounts.length === 0) return [];
  const { rows } = await sql<{ token_account: string; owner: string; mint: string; account_id: string }>`
    SELECT token_account, owner, mint, account_id FROM followed_token_accounts
     WHERE token_account = ANY(${[...tokenAccounts]}::text[])`.execute(db);
  return rows.map((row) => ({
    tokenAccount: row.token_account,
    owner: row.owner,
    mint: row.mint,
    accountId: row.account_id,
  }));
}

/** What the follower credited before for a signature: its live credits and its reversed landings. */
export interface SignatureCredits {
  /** Token accounts with a live (not reversed) credit of it. */
  live: Set<string>;
  /** Movements of it that a fork reversed. */
  reversedLandings: number;
}

/**
 * The block follower's credits of `signatures` (a block read again after a crash or by a second
 * follower credits nothing twice; a signature whose landing was reversed is credited again).
 */
export async function creditsOf(
  db: Executor,
  signatures: readonly string[],
): Promise<Map<string, SignatureCredits>> {
  const found = new Map<string, SignatureCredits>();
  if (signatures.length === 0) return found;
  const { rows } = await sql<{
    signature: string;
    token_account: string;
    movement_id: string;
    status: string;
  }>`
    SELECT signature, token_account, movement_id, status FROM deposit_credits
     WHERE signature = ANY(${[...signatures]}::text[])`.execute(db);
  const reversed = new Map<string, Set<string>>();
  for (const row of rows) {
    const entry = found.get(row.signature) ?? { live: new Set<string>(), reversedLandings: 0 };
    found.set(row.signature, entry);
    if (row.status !== 'reversed') entry.live.add(row.token_account);
    else reversed.set(row.signature, (reversed.get(row.signature) ?? new Set()).add(row.movement_id));
  }
  for (const [signature, movements] of reversed) found.get(signature)!.reversedLandings = movements.size;
  return found;
}

export async function insertDepositCredits(
  trx: Transaction<Database>,
  credits: readonly DepositCreditRow[],
): Promise<void> {
  if (credits.length === 0) return;
  await sql`
    INSERT INTO deposit_credits (signature, token_account, account_id, amount, movement_id, slot, blockhash)
    SELECT * FROM unnest(${credits.map((c) => c.signature)}::text[], ${credits.map((c) => c.tokenAccount)}::text[],
                         ${credits.map((c) => c.accountId)}::uuid[], ${credits.map((c) => c.amount.toString())}::bigint[],
                         ${credits.map((c) => c.movementId)}::uuid[], ${credits.map((c) => c.slot)}::bigint[],
                         ${credits.map((c) => c.blockhash)}::text[])`.execute(trx);
}

/** The credited, not yet finalized deposits of blocks at or below `slot` (oldest first). */
export async function unsettledCredits(
  db: Executor,
  atOrBelowSlot: number,
): Promise<Array<{ movementId: string; slot: number; blockhash: string }>> {
  const { rows } = await sql<{ movement_id: string; slot: bigint; blockhash: string }>`
    SELECT DISTINCT movement_id, slot, blockhash FROM deposit_credits
     WHERE status = 'confirmed' AND slot <= ${atOrBelowSlot} ORDER BY slot`.execute(db);
  return rows.map((row) => ({
    movementId: row.movement_id,
    slot: Number(row.slot),
    blockhash: row.blockhash,
  }));
}

/** The oldest slot holding a credit not finalized yet (null: none). */
export async function oldestUnsettledSlot(db: Db): Promise<number | null> {
  const { rows } = await sql<{ slot: bigint | null }>`
    SELECT min(slot) AS slot FROM deposit_credits WHERE status = 'confirmed'`.execute(db);
  return rows[0]?.slot == null ? null : Number(rows[0].slot);
}

/** The movements credited from the block at `slot` that are still live (a fork drops them). */
export async function creditedMovementsInBlock(trx: Transaction<Database>, slot: number): Promise<string[]> {
  const { rows } = await sql<{ movement_id: string }>`
    SELECT DISTINCT movement_id FROM deposit_credits WHERE slot = ${slot} AND status = 'confirmed'`.execute(
    trx,
  );
  return rows.map((row) => row.movement_id);
}

/** Whether deposits credited from the block at `slot` were made spendable (finalized). */
export async function hasFinalizedCredits(trx: Transaction<Database>, slot: number): Promise<boolean> {
  const { rows } = await sql<{ found: boolean }>`
    SELECT EXISTS (SELECT 1 FROM deposit_credits WHERE slot = ${slot} AND status = 'finalized') AS found`.execute(
    trx,
  );
  return rows[0]?.found === true;
}

/**
 * Marks the credits of `movementIds` and their deposit_transactions rows `finalized` or
 * `reversed`; returns the movements it changed (a movement already settled is left alone).
 */
export async function settleCredits(
  trx: Transaction<Database>,
  movementIds: readonly string[],
  status: 'finalized' | 'reversed',
): Promise<string[]> {
  if (movementIds.length === 0) return [];
  const { rows } = await sql<{ movement_id: string }>`
    UPDATE deposit_credits SET status = ${status}, settled_at = now()
     WHERE movement_id = ANY(${[...movementIds]}::uuid[]) AND status = 'confirmed'
    RETURNING movement_id`.execute(trx);
  const changed = [...new Set(rows.map((row) => row.movement_id))];
  if (changed.length > 0) {
    await sql`
      UPDATE deposit_transactions
         SET status = ${status},
             finalized_at = CASE WHEN ${status} = 'finalized' THEN coalesce(finalized_at, now()) END,
             slot = coalesce(slot, (SELECT max(c.slot) FROM deposit_credits c WHERE c.movement_id = deposit_transactions.movement_id))
       WHERE movement_id = ANY(${changed}::uuid[]) AND status <> 'reversed'`.execute(trx);
  }
  return changed;
}

/** A transaction seen in a followed block (its net token movements), with the block it was seen in. */
export interface SeenTransaction {
  tx: {
    signature: string;
    slot: number;
    blockTime: Date;
    fee: number;
    err: unknown;
    movements: Array<{
      accountIndex: number;
      mint: string;
      owner: string;
      tokenAccount: string;
      amount: bigint;
    }>;
  };
  blockhash: string;
}

/** Records the outbox transactions seen in the blocks passed (the reconciler reads them). */
export async function insertFollowedTransactions(
  trx: Transaction<Database>,
  seen: readonly SeenTransaction[],
): Promise<void> {
  if (seen.length === 0) return;
  const json = seen.map(({ tx }) =>
    JSON.stringify(tx.movements.map((m) => ({ ...m, amount: m.amount.toString() }))),
  );
  await sql`
    INSERT INTO followed_transactions (signature, slot, blockhash, block_time, fee, err, movements)
    SELECT * FROM unnest(${seen.map((s) => s.tx.signature)}::text[], ${seen.map((s) => s.tx.slot)}::bigint[],
                         ${seen.map((s) => s.blockhash)}::text[], ${seen.map((s) => s.tx.blockTime)}::timestamptz[],
                         ${seen.map((s) => s.tx.fee)}::bigint[],
                         ${seen.map((s) => (s.tx.err === null ? null : JSON.stringify(s.tx.err)))}::jsonb[],
                         ${json}::jsonb[])
    ON CONFLICT (signature) DO UPDATE
      SET slot = excluded.slot, blockhash = excluded.blockhash, block_time = excluded.block_time,
          fee = excluded.fee, err = excluded.err, movements = excluded.movements, seen_at = now()`.execute(
    trx,
  );
}

/** What the follower saw of `signatures` (those it has not seen are absent). */
export async function followedTransactions(
  db: Executor,
  signatures: readonly string[],
): Promise<Map<string, SeenTransaction>> {
  if (signatures.length === 0) return new Map();
  const { rows } = await sql<{
    signature: string;
    slot: bigint;
    blockhash: string;
    block_time: Date;
    fee: bigint;
    err: unknown;
    movements: Array<{
      accountIndex: number;
      mint: string;
      owner: string;
      tokenAccount: string;
      amount: string;
    }>;
  }>`
    SELECT signature, slot, blockhash, block_time, fee, err, movements FROM followed_transactions
     WHERE signature = ANY(${[...signatures]}::text[])`.execute(db);
  return new Map(
    rows.map((row) => [
      row.signature,
      {
        blockhash: row.blockhash,
        tx: {
          signature: row.signature,
          slot: Number(row.slot),
          blockTime: row.block_time,
          fee: Number(row.fee),
          err: row.err ?? null,
          movements: row.movements.map((m) => ({ ...m, amount: BigInt(m.amount) })),
        },
      },
    ]),
  );
}

/** Forgets sightings older than `olderThanMs` (the reconciler has long judged them). */
export async function pruneFollowedTransactions(db: Db, olderThanMs: number): Promise<void> {
  await sql`DELETE FROM followed_transactions
             WHERE seen_at < now() - make_interval(secs => ${olderThanMs / 1000})`.execute(db);
}

/** Whether any account has a wallet (a follower starting without a cursor sweeps their history). */
export async function anyWalletExists(db: Db): Promise<boolean> {
  const { rows } = await sql<{ found: boolean }>`
    SELECT EXISTS (SELECT 1 FROM accounts WHERE wallet_address IS NOT NULL) AS found`.execute(db);
  return rows[0]?.found === true;
}

/** Moves the held credits of deposit movements whose block was finalized to the spendable balance. */
export async function releaseHeldDeposits(
  trx: Transaction<Database>,
  movementIds: readonly string[],
): Promise<void> {
  await releaseHeldCreditsSql(sql`SELECT unnest(${[...movementIds]}::uuid[])`).execute(trx);
}

/** `@handle` per account id. */
export async function accountHandles(db: Db, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('accounts')
    .select(['id', 'handle'])
    .where('id', 'in', [...ids])
    .execute();
  return new Map(rows.map((row) => [row.id, `@${row.handle}`]));
}
