import { PublicKey } from '@solana/web3.js';
import {
  associatedTokenAccount,
  type PlatformChain,
  type RpcClient,
} from '../../src/adapters/solana/index.js';
import type { App } from '../../src/app/wiring.js';
import type { AccountMoney } from '../../src/domain/accounts/account.js';
import { paymentsSettled } from './settled.js';

/**
 * Balances as a test asserts them: after every payment in flight has settled (a 201 answers when
 * the cluster executed the payment; the ledger releases its credits at confirmation).
 */
export async function settledMoney(app: App, accountId: string): Promise<AccountMoney> {
  await paymentsSettled(app.db);
  return app.ledger.money(accountId);
}

/**
 * The owner's balance of `mint` on chain, in base units, once every payment in flight has settled.
 * 0 when the owner has no token account (a wallet nobody paid yet has none).
 */
async function onChainTokens(
  app: Pick<App, 'db' | 'rpc'>,
  mint: PublicKey,
  owner: string | PublicKey,
): Promise<bigint> {
  await paymentsSettled(app.db);
  const ata = associatedTokenAccount(mint, typeof owner === 'string' ? new PublicKey(owner) : owner);
  if (!(await tokenAccountExists(app, ata))) return 0n;
  const { value } = await app.rpc.call<{ value: { amount: string } }>('getTokenAccountBalance', [
    ata.toBase58(),
  ]);
  return BigInt(value.amount);
}

/** Whether a token account exists on chain (commitment confirmed). */
export async function tokenAccountExists(app: Pick<App, 'rpc'>, address: PublicKey): Promise<boolean> {
  const { value } = await app.rpc.call<{ value: unknown }>('getAccountInfo', [
    address.toBase58(),
    { encoding: 'base64', commitment: 'confirmed' },
  ]);
  return value !== null;
}

/** The owner's USDC on chain, in micro-USD, once every payment in flight has settled. */
export const onChainUsdc = (
  app: Pick<App, 'db' | 'rpc'>,
  platform: PlatformChain,
  owner: string | PublicKey,
) => onChainTokens(app, platform.usdcMint, owner);

/** The owner's native tokens on chain, in base units, once every payment in flight has settled. */
export const onChainNative = (app: App, platform: PlatformChain, owner: string | PublicKey) =>
  onChainTokens(app, platform.nativeMint, owner);

/**
 * The tokens of `mint` a wallet holds on chain, summed over its token accounts, as a client of the
 * cluster reads it (for tests that run the service in other processes and have no App).
 */
export async function walletTokens(rpc: RpcClient, owner: string, mint: string): Promise<bigint> {
  const { value } = await rpc.call<{
    value: Array<{ account: { data: { parsed: { info: { tokenAmount: { amount: string } } } } } }>;
  }>('getTokenAccountsByOwner', [owner, { mint }, { encoding: 'jsonParsed', commitment: 'confirmed' }]);
  return value.reduce((sum, a) => sum + BigInt(a.account.data.parsed.info.tokenAmount.amount), 0n);
}
