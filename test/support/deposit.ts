import type { PlatformChain } from '../../src/adapters/solana/index.js';
import { fundNative, fundUsdc } from '../../src/adapters/solana/index.js';
import type { App } from '../../src/app/wiring.js';
import type { Account } from '../../src/domain/accounts/account.js';
import { createAccount } from '../../src/domain/accounts/accounts.service.js';

/**
 * Money for a test account, as the dev faucet gives it: USDC minted into its wallet on the
 * localnet and the same amount credited in the ledger as a deposit keyed by the signature, so the
 * ledger equals the chain from the start.
 */
export async function depositUsdc(
  app: App,
  platform: PlatformChain,
  account: Account,
  micro: bigint,
): Promise<string> {
  const { signature } = await fundUsdc(app.rpc, platform, account.walletAddress, micro);
  await app.ledger.record({
    kind: 'deposit',
    idempotencyKey: `deposit:${signature}`,
    legs: [
      { account: { kind: 'external' }, units: -micro, counts: 'none' },
      { account: { kind: 'user', accountId: account.id }, units: micro, counts: 'none' },
    ],
  });
  return signature;
}

/**
 * Native tokens for a test account, as the dev faucet gives them: `units` base units minted into
 * its native token account and credited to its native ledger account as a deposit keyed by the
 * signature (ledger = chain for the native token too).
 */
export async function depositNative(
  app: App,
  platform: PlatformChain,
  account: Pick<Account, 'id' | 'walletAddress'>,
  units: bigint,
): Promise<string> {
  const { signature } = await fundNative(app.rpc, platform, account.walletAddress, units);
  await app.ledger.record({
    kind: 'deposit',
    idempotencyKey: `deposit:${signature}`,
    legs: [
      { account: { kind: 'external', currency: 'native' }, units: -units, counts: 'none' },
      {
        account: { kind: 'user', accountId: account.id, currency: 'native' },
        units: units,
        counts: 'none',
      },
    ],
  });
  return signature;
}

/** A new account (no API key) holding `micro` on chain and in the ledger. */
export async function fundedAccount(
  app: App,
  platform: PlatformChain,
  handle: string,
  micro: bigint,
): Promise<Account> {
  const account = await createAccount(app, { handle });
  await depositUsdc(app, platform, account, micro);
  return account;
}
