import { PublicKey } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { LOCALNET_SEED, MAINNET_USDC_MINT, type PlatformChain } from '../src/adapters/solana/index.js';
import { associatedTokenAccount } from '../src/adapters/solana/transaction-builder.js';
import { grantDevFunds } from '../src/app/dashboards/dev-faucet.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

/**
 * On a validator we do not control (compose's solana-test-validator: the localnet here with its
 * `localnet_*` methods hidden), the bootstrap creates both mints with authorities it holds, seeds
 * the swap pool and the creator fund, and the dev faucet pays, as on the embedded localnet.
 */
let env: TestEnv;
let platform: PlatformChain;

beforeAll(async () => {
  env = await openTestEnv({}, { chain: 'plain-validator' });
  platform = await env.app.bootstrapChain();
});
afterAll(async () => {
  await env?.close();
});

async function parsedAccount(address: PublicKey) {
  const { value } = await env.app.rpc.call<{
    value: { data: { parsed: { info: Record<string, unknown> } } } | null;
  }>('getAccountInfo', [address.toBase58(), { encoding: 'jsonParsed', commitment: 'confirmed' }]);
  return value?.data.parsed.info;
}

async function tokenAmount(mint: PublicKey, owner: PublicKey): Promise<bigint> {
  const info = (await parsedAccount(associatedTokenAccount(mint, owner))) as
    { tokenAmount: { amount: string } } | undefined;
  return BigInt(info?.tokenAmount.amount ?? 0);
}

describe('bootstrap on a private validator', () => {
  test('it is not taken for the localnet: our own mints, with our authorities', async () => {
    const hidden = await fetch(env.localnet!.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'localnet_getInfo', params: [] }),
    });
    expect(((await hidden.json()) as { error?: { code: number } }).error?.code).toBe(-32601);
    expect(platform.cluster).toBe('local-validator');
    expect(platform.mintsTestTokens).toBe(true);
    // Not the mainnet address the localnet places its USDC at: a mint of our own, named as such.
    expect(platform.usdcMint.toBase58()).not.toBe(MAINNET_USDC_MINT);
    expect(await parsedAccount(platform.usdcMint)).toMatchObject({
      decimals: 6,
      mintAuthority: platform.signers.usdc_mint_authority.publicKey.toBase58(),
    });
    expect(await parsedAccount(platform.nativeMint)).toMatchObject({
      mintAuthority: platform.signers.native_mint_authority.publicKey.toBase58(),
    });
  });

  test('the swap pool and the creator fund are seeded', async () => {
    const pool = platform.signers.pool_authority.publicKey;
    expect(await tokenAmount(platform.usdcMint, pool)).toBe(LOCALNET_SEED.poolUsdc);
    expect(await tokenAmount(platform.nativeMint, pool)).toBe(LOCALNET_SEED.poolNative);
    expect(await tokenAmount(platform.nativeMint, platform.signers.creator_fund.publicKey)).toBe(
      LOCALNET_SEED.creatorFundNative,
    );
  });

  test('the dev faucet grants $10 of our USDC: on chain and in the ledger', async () => {
    const account = await createAccount(env.app, { handle: 'validator_fan' });
    const grant = await grantDevFunds(env.app, {
      accountId: account.id,
      handle: account.handle,
      walletAddress: account.walletAddress,
      role: 'user',
      keyId: 'x',
      scopes: new Set(['read']),
    });
    expect(grant.amountMicro).toBe(10_000_000n);
    expect(await tokenAmount(platform.usdcMint, new PublicKey(account.walletAddress))).toBe(10_000_000n);
    const balance = await env.app.db
      .selectFrom('ledger_accounts')
      .select('balance')
      .where('account_id', '=', account.id)
      .where('currency', '=', 'usdc')
      .executeTakeFirstOrThrow();
    expect(BigInt(balance.balance)).toBe(10_000_000n);
  });
});
