import type { Redis } from 'ioredis';
import { takeSlidingWindowSlot } from '../../adapters/redis/sliding-window.js';
import {
  FaucetRefusedError,
  fundUsdc,
  type PlatformChain,
  type RpcClient,
} from '../../adapters/solana/index.js';
import type { Viewer } from '../../domain/auth/api-keys.service.js';
import { AppError } from '../../domain/errors.js';
import type { LedgerStore } from '../../domain/ledger/ledger-store.port.js';

/** What one click of the developer portal's faucet button gives: $10 of localnet USDC. */
export const DEV_FAUCET_AMOUNT_MICRO = 10_000_000n;
/**
 * At most 3 grants per account in any 10 minutes (a sliding window). Fixed, not scaled by
 * RATE_LIMIT_MULTIPLIER: the faucet mints money, so load tests that switch the API's limits off
 * must not switch this off.
 */
export const DEV_FAUCET_LIMIT = 3;
export const DEV_FAUCET_WINDOW_SECONDS = 600;

export interface DevFaucetDeps {
  rpc: RpcClient;
  ledger: LedgerStore;
  redis: Redis;
  redisPrefix: string;
  bootstrapChain(): Promise<PlatformChain>;
  /** Clock in epoch milliseconds for the grant limit; @defaultValue Date.now */
  now?: () => number;
}

/**
 * Whether the faucet serves this deployment: a private cluster (the embedded localnet or a
 * validator we run) whose USDC and native mints are ours. Never a public cluster.
 */
export async function devFaucetAvailable(deps: Pick<DevFaucetDeps, 'bootstrapChain'>): Promise<boolean> {
  return (await deps.bootstrapChain()).mintsTestTokens;
}

/**
 * Mints DEV_FAUCET_AMOUNT_MICRO of localnet USDC into the viewer's custodial wallet and credits
 * the ledger with the same deposit the CLI's `fund` records (keyed by the signature, so the
 * indexer's deposit detection can never credit it twice). Refused (403) on any other cluster,
 * before anything is counted; 429 past the limit.
 */
export async function grantDevFunds(
  deps: DevFaucetDeps,
  viewer: Viewer,
): Promise<{ signature: string; amountMicro: bigint }> {
  const platform = await deps.bootstrapChain();
  if (!platform.mintsTestTokens) {
    throw new AppError(
      'forbidden',
      `The dev faucet exists only on a private cluster whose test USDC we mint; this deployment runs on ${platform.cluster}`,
    );
  }
  if (!viewer.walletAddress)
    throw new AppError('conflict', 'The wallet of this account is still being created');
  await spendFaucetGrant(deps, viewer.accountId);
  let signature: string;
  try {
    ({ signature } = await fundUsdc(deps.rpc, platform, viewer.walletAddress, DEV_FAUCET_AMOUNT_MICRO));
  } catch (error) {
    if (error instanceof FaucetRefusedError) throw new AppError('forbidden', error.message);
    throw error;
  }
  await deps.ledger.record({
    kind: 'deposit',
    idempotencyKey: `deposit:${signature}`,
    legs: [
      { account: { kind: 'external' }, units: -DEV_FAUCET_AMOUNT_MICRO, counts: 'none' },
      {
        account: { kind: 'user', accountId: viewer.accountId },
        units: DEV_FAUCET_AMOUNT_MICRO,
        counts: 'none',
      },
    ],
  });
  return { signature, amountMicro: DEV_FAUCET_AMOUNT_MICRO };
}

/** Where the account's recent grants are logged (shared by every API process). */
export function faucetGrantsKey(redisPrefix: string, accountId: string): string {
  return `${redisPrefix}:faucet-grants:${accountId}`;
}

/**
 * Counts a grant before minting, so a grant whose mint then fails still counts: the limit is on
 * attempts, and a failing mint retried in a loop cannot hammer the chain.
 */
async function spendFaucetGrant(deps: DevFaucetDeps, accountId: string): Promise<void> {
  const slot = await takeSlidingWindowSlot(deps.redis, faucetGrantsKey(deps.redisPrefix, accountId), {
    limit: DEV_FAUCET_LIMIT,
    windowMs: DEV_FAUCET_WINDOW_SECONDS * 1000,
    nowMs: (deps.now ?? Date.now)(),
  });
  if (!slot.allowed) {
    const retryAfterSeconds = Math.ceil(slot.retryAfterMs / 1000);
    throw new AppError(
      'rate_limited',
      `The dev faucet gives at most ${DEV_FAUCET_LIMIT} grants per ${DEV_FAUCET_WINDOW_SECONDS / 60} minutes; retry in ${retryAfterSeconds} s`,
      { retryAfterSeconds },
    );
  }
}
