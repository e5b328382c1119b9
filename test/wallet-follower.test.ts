import { PublicKey } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  associatedTokenAccount,
  buildTransfer,
  fundUsdc,
  LOCALNET_SEED,
  sendAndConfirm,
  signTransaction,
  USDC_DECIMALS,
  type PlatformChain,
} from '../src/adapters/solana/index.js';
import { followWallets, type FollowOptions } from '../src/app/indexer/wallet-follower.js';
import { commitPost } from '../src/app/write-path/create-post.js';
import { settlePayment } from '../src/app/write-path/settle-payment.js';
import { depositUsdc, fundedAccount } from './support/deposit.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

/**
 * The wallet follower against the real localnet: USDC that reaches a user from outside the ledger
 * is credited once as a deposit (across reruns and a lost cursor); USDC that leaves one of our
 * wallets without the ledger is an `unexplained` reconciliation row; the write path's own
 * transactions and the faucet's recorded deposits are neither.
 */
let env: TestEnv;
let platform: PlatformChain;

beforeAll(async () => {
  env = await openTestEnv({}, { chain: true });
  platform = await env.app.bootstrapChain();
});
afterAll(async () => {
  await env?.close();
});

const follow = (options?: FollowOptions) => followWallets(env.app, options);
const available = async (accountId: string) => (await env.app.ledger.money(accountId)).availableMicro;

async function depositsKeyed(signature: string): Promise<number> {
  const rows = await env.app.db
    .selectFrom('ledger_movements')
    .select('id')
    .where('idempotency_key', '=', `deposit:${signature}`)
    .execute();
  return rows.length;
}

async function reconciliationRows(signature: string) {
  const result = await env.app.clickhouse.client.query({
    query: `SELECT toString(movement_id) AS movement_id, status, ledger_amount, chain_amount, commitment, detail
              FROM ${env.app.clickhouse.table('reconciliation')} FINAL
             WHERE signature = {sig:String}`,
    query_params: { sig: signature },
    format: 'JSONEachRow',
  });
  return result.json<Record<string, string>>();
}

/** What ClickHouse indexed of one owner and mint: its token movements' sum and signatures. */
async function indexedOf(owner: string, mint: string) {
  const result = await env.app.clickhouse.client.query({
    query: `SELECT toString(sum(m.amount)) AS amount, groupArray(m.signature) AS signatures,
                   countIf(t.signature != '') AS with_transaction
              FROM ${env.app.clickhouse.table('token_movements')} AS m FINAL
              LEFT JOIN (SELECT signature FROM ${env.app.clickhouse.table('chain_transactions')} FINAL) AS t
                ON t.signature = m.signature
             WHERE m.owner = {owner:String} AND m.mint = {mint:String}`,
    query_params: { owner, mint },
    format: 'JSONEachRow',
  });
  const [row] = await result.json<{ amount: string; signatures: string[]; with_transaction: string }>();
  return {
    amount: BigInt(row?.amount ?? '0'),
    signatures: row?.signatures ?? [],
    withTransaction: Number(row?.with_transaction ?? 0),
  };
}

/** Moves USDC out of the treasury on chain, as a leaked key would: the ledger knows nothing. */
async function treasuryLeak(to: string, micro: bigint): Promise<string> {
  const treasury = platform.signers.treasury;
  const { blockhash, lastValidBlockHeight } = await env.app.rpc.getLatestBlockhash('confirmed');
  const tx = buildTransfer({
    feePayer: platform.signers.fee_payer.publicKey,
    recentBlockhash: blockhash,
    legs: [
      {
        mint: platform.usdcMint,
        decimals: USDC_DECIMALS,
        from: treasury.publicKey,
        to: new PublicKey(to),
        amount: micro,
      },
    ],
  });
  const signed = signTransaction(tx, [platform.signers.fee_payer, treasury]);
  await sendAndConfirm(env.app.rpc, { ...signed, lastValidBlockHeight }, { commitment: 'confirmed' });
  return signed.signature;
}

describe('wallet follower', () => {
  test('an external deposit is credited exactly once, across reruns and a lost cursor', async () => {
    const user = await fundedAccount(env.app, platform, 'wf_depositor', 1_000_000n);
    expect(await available(user.id)).toBe(1_000_000n);

    // Minted straight into the wallet: the chain has it, the ledger does not.
    const { signature } = await fundUsdc(env.app.rpc, platform, user.walletAddress, 2_500_000n);
    // One signature per page: the follower must walk `before` back to the cursor.
    const first = await follow({ pageSize: 1 });
    expect(first.deposits).toBe(1);
    expect(first.unexplained).toBe(0);
    // The faucet deposit the ledger already had is not credited again.
    expect(await available(user.id)).toBe(3_500_000n);
    expect(await depositsKeyed(signature)).toBe(1);

    expect((await follow()).deposits).toBe(0);

    // A restart that lost the cursor reads the whole history again and credits nothing twice.
    const ata = associatedTokenAccount(platform.usdcMint, new PublicKey(user.walletAddress)).toBase58();
    await env.app.db.deleteFrom('wallet_cursors').where('address', '=', ata).execute();
    expect((await follow({ pageSize: 1 })).deposits).toBe(0);
    expect(await available(user.id)).toBe(3_500_000n);
    expect(await depositsKeyed(signature)).toBe(1);
    const cursor = await env.app.db
      .selectFrom('wallet_cursors')
      .select('last_signature')
      .where('address', '=', ata)
      .executeTakeFirstOrThrow();
    expect(cursor.last_signature).toBe(signature);
  });

  test('USDC leaving the treasury without the ledger is unexplained, and not a deposit for its recipient', async () => {
    const recipient = await fundedAccount(env.app, platform, 'wf_recipient', 1_000_000n);
    const treasury = platform.signers.treasury.publicKey.toBase58();
    await fundUsdc(env.app.rpc, platform, treasury, 3_000_000n);
    await follow();

    const leak = await treasuryLeak(recipient.walletAddress, 1_250_000n);
    const round = await follow();
    expect(round).toMatchObject({ deposits: 0, unexplained: 1 });

    const rows = await reconciliationRows(leak);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      movement_id: '00000000-0000-0000-0000-000000000000',
      status: 'unexplained',
      ledger_amount: '0',
      chain_amount: '1250000',
      commitment: 'confirmed',
    });
    expect(rows[0]!.detail).toContain(treasury);
    // The money came from one of our wallets: the recipient's ledger balance does not move.
    expect(await available(recipient.id)).toBe(1_000_000n);
    expect(await depositsKeyed(leak)).toBe(0);

    const unexplained = (await env.app.metrics.reconciliations.get()).values.find(
      (v) => v.labels.status === 'unexplained' && v.labels.commitment === 'confirmed',
    );
    expect(unexplained?.value).toBe(1);

    // Seen again (the next round), it is neither counted nor written twice.
    expect((await follow()).unexplained).toBe(0);
    expect(await reconciliationRows(leak)).toHaveLength(1);
  });

  test("a deposit the faucet already credited is indexed (token movements and transaction), never credited again; so is the bootstrap's seed", async () => {
    const user = await fundedAccount(env.app, platform, 'wf_faucet', 1_000_000n);
    const signature = await depositUsdc(env.app, platform, user, 2_000_000n);
    const round = await follow();
    expect(round.deposits).toBe(0);
    expect(round.recorded).toBeGreaterThanOrEqual(2);
    expect(await available(user.id)).toBe(3_000_000n);
    expect(await depositsKeyed(signature)).toBe(1);
    const usdc = platform.usdcMint.toBase58();
    const indexed = await indexedOf(user.walletAddress, usdc);
    // Both faucet deposits: the chain's side is complete although the faucet credited the ledger.
    expect(indexed.amount).toBe(3_000_000n);
    expect(indexed.signatures).toContain(signature);
    expect(indexed.withTransaction).toBe(indexed.signatures.length);
    // The swap pool's vaults were seeded by the bootstrap (no swap in this file): indexed too.
    const pool = platform.signers.pool_authority.publicKey.toBase58();
    expect((await indexedOf(pool, usdc)).amount).toBe(LOCALNET_SEED.poolUsdc);
    expect((await indexedOf(pool, platform.nativeMint.toBase58())).amount).toBe(LOCALNET_SEED.poolNative);
    const fund = platform.signers.creator_fund.publicKey.toBase58();
    expect((await indexedOf(fund, platform.nativeMint.toBase58())).amount).toBe(
      LOCALNET_SEED.creatorFundNative,
    );
  });

  test('a wallet whose account has no native ledger account is followed at its USDC token account only', async () => {
    const before = (await follow()).addresses;
    await fundedAccount(env.app, platform, 'wf_usdc_only', 1_000_000n);
    expect((await follow()).addresses).toBe(before + 1);
  });

  test('a paid post made through the write path is neither a deposit nor unexplained', async () => {
    const author = await fundedAccount(env.app, platform, 'wf_author', 5_000_000n);
    await follow();

    const post = await commitPost(env.app, author.id, { type: 'post', content: 'hello' });
    expect(await settlePayment(env.app, post.chainTransactionId)).toBe('confirmed');

    expect(await follow()).toMatchObject({ signatures: 0, deposits: 0, unexplained: 0 });
    expect(await reconciliationRows(post.swapTx)).toHaveLength(0);
    expect(await depositsKeyed(post.swapTx)).toBe(0);
    expect(await available(author.id)).toBe(4_000_000n);
  });
});
