import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import pino from 'pino';
import { fundUsdc, type PlatformChain } from '../src/adapters/solana/index.js';
import { createBlockFollower, type BlockFollower, type FollowStep } from '../src/app/indexer/block-follower.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';
import { until } from './support/until.js';

/**
 * The block follower against the real localnet (100 ms slots, finalized 32 slots behind): a deposit
 * into one of many followed accounts is credited once at confirmed, held in `pending`, and becomes
 * spendable when its block is finalized; the history shows it with its signature.
 */
let env: TestEnv;
let platform: PlatformChain;
let follower: BlockFollower;

beforeAll(async () => {
  env = await openTestEnv({}, { chain: true });
  platform = await env.app.bootstrapChain();
  follower = createBlockFollower({ ...env.app, logger: pino({ level: 'silent' }) });
});
afterAll(async () => {
  await env?.close();
});

/** Rounds until the follower has passed every confirmed block (what it did, summed). */
async function catchUp(): Promise<FollowStep> {
  const total: FollowStep = { blocks: 0, deposits: 0, finalized: 0, reversed: 0, unexplained: 0, fork: false, more: false };
  for (let i = 0; i < 200; i++) {
    const round = await follower.step();
    total.blocks += round.blocks;
    total.deposits += round.deposits;
    total.finalized += round.finalized;
    total.reversed += round.reversed;
    total.unexplained += round.unexplained;
    if (!round.more && !round.stoppedBy) return total;
  }
  throw new Error('the follower did not catch up in 200 rounds');
}

const money = (accountId: string) => env.app.ledger.money(accountId);

describe('block follower', () => {
  test('a deposit is held at confirmed, spendable once finalized, credited once', async () => {
    const users = [];
    for (let i = 0; i < 5; i++) users.push(await createAccount(env.app, { handle: `bf_user_${i}` }));
    await catchUp();

    const { signature } = await fundUsdc(env.app.rpc, platform, users[2]!.walletAddress, 2_500_000n);
    await until('the deposit credited', async () => (await catchUp()).deposits, (n) => n === 1, 10_000);
    expect(await money(users[2]!.id)).toMatchObject({ pendingMicro: 2_500_000n, availableMicro: 0n });
    const credit = await env.app.db
      .selectFrom('deposit_transactions')
      .select(['status'])
      .where('signature', '=', signature)
      .executeTakeFirstOrThrow();
    expect(credit.status).toBe('confirmed');

    await until(
      'the deposit finalized',
      async () => (await catchUp(), (await money(users[2]!.id)).availableMicro),
      (micro) => micro === 2_500_000n,
      20_000,
    );
    expect(await money(users[2]!.id)).toMatchObject({ pendingMicro: 0n, availableMicro: 2_500_000n });
    const settled = await env.app.db
      .selectFrom('deposit_transactions')
      .select(['status'])
      .where('signature', '=', signature)
      .executeTakeFirstOrThrow();
    expect(settled.status).toBe('finalized');
    for (const other of [0, 1, 3, 4]) expect((await money(users[other]!.id)).availableMicro).toBe(0n);

    expect((await catchUp()).deposits).toBe(0);
  }, 60_000);
});
