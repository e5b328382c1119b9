import { randomBytes } from 'node:crypto';
import { fundUsdc, type PlatformChain } from '../src/adapters/solana/index.js';
import type { CoreServices } from '../src/app/wiring-core.js';
import type { Account } from '../src/domain/accounts/account.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';

/** An account a benchmark pays with, and its API key (every scope). */
export interface Member {
  account: Account;
  key: string;
}

/**
 * `count` accounts with keys, each funded with `fundingMicro` USDC on chain by the dev faucet and
 * the deposit recorded in the ledger, as a deposit the indexer saw would be: they can pay at once.
 */
export async function fundedMembers(
  // The stores and chain only: an in-process service, or a core opened beside a running one (chaos).
  service: { app: CoreServices; platform: PlatformChain },
  count: number,
  fundingMicro: bigint,
): Promise<Member[]> {
  const { app, platform } = service;
  const tag = randomBytes(3).toString('hex');
  const members: Member[] = [];
  // A few at a time: the faucet's transfers confirm on the 400 ms slot, so waiting one by one is slow.
  for (let from = 0; from < count; from += 10) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(10, count - from) }, async (_, k) => {
        const account = await createAccount(app, { handle: `wb_${tag}_${from + k}` });
        const { key } = await createApiKey(app.apiKeys, account.id);
        const { signature } = await fundUsdc(app.rpc, platform, account.walletAddress, fundingMicro);
        await app.ledger.record({
          kind: 'deposit',
          idempotencyKey: `deposit:${signature}`,
          legs: [
            { account: { kind: 'external' }, units: -fundingMicro, counts: 'none' },
            { account: { kind: 'user', accountId: account.id }, units: fundingMicro, counts: 'none' },
          ],
        });
        return { account, key };
      }),
    );
    members.push(...batch);
  }
  return members;
}
