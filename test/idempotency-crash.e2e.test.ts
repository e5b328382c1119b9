import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { PlatformChain } from '../src/adapters/solana/index.js';
import { idempotencyLeaseMs } from '../src/app/write-path/idempotency-keys.js';
import type { Account } from '../src/domain/accounts/account.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { processorsFor } from '../workers/processors.js';
import type { RunningRole } from '../workers/role.js';
import { startWorkerRole } from '../workers/worker.role.js';
import { onChainUsdc } from './support/balances.js';
import { depositUsdc } from './support/deposit.js';
import { paymentsSettled } from './support/settled.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';
import { killChild, startRoleChild } from './support/role-child.js';
import { freePort } from '../src/devstack/free-port.js';

/**
 * The API as a real child process, killed with SIGKILL in the middle of a burst of paid posts
 * carrying Idempotency-Keys, then restarted; a careful client retries every key that got no final
 * answer until it gets one. At the kill some requests had not committed (still signing, or their
 * commit waiting on a balance row this test holds), others had committed and were waiting for the
 * chain (no payments worker runs until the kill, so none was answered). Some commits are left
 * waiting inside Postgres by the dead process (their backends outlive it): one account's are let
 * through right after the restart (before the keys' leases run out), another's only after the
 * retries took the keys over. Per account, afterwards: the posts charged are exactly the posts
 * acknowledged (2xx), the ledger equals the chain, and no key is left answering 409.
 */
let env: TestEnv;
let platform: PlatformChain;
let worker: RunningRole | undefined;
let api: ChildProcessWithoutNullStreams | undefined;
const lockers: pg.Client[] = [];

/** Short, so the test waits little for leases: the committed posts wait this long for the chain. */
const WRITE_TIMEOUT_MS = 6_000;

beforeAll(async () => {
  env = await openTestEnv({ RATE_LIMIT_MULTIPLIER: '0' }, { chain: true });
  platform = await env.app.bootstrapChain();
});
afterAll(async () => {
  if (api && api.exitCode === null) api.kill('SIGKILL');
  for (const locker of lockers) await locker.end().catch(() => {});
  await worker?.stop();
  await env?.close();
});

const startApi = (port: number) =>
  startRoleChild(env, 'api', [], {
    HOST: '127.0.0.1',
    PORT: String(port),
    WRITE_TIMEOUT_MS: String(WRITE_TIMEOUT_MS),
    RATE_LIMIT_MULTIPLIER: '0',
  });

/** Holds the account's USDC balance row: its paid writes wait inside their commit statement. */
async function holdBalanceRow(accountId: string): Promise<pg.Client> {
  const locker = new pg.Client({ connectionString: env.config.DATABASE_URL });
  await locker.connect();
  lockers.push(locker);
  await locker.query('BEGIN');
  await locker.query(
    `SELECT id FROM ledger_accounts WHERE account_id = $1 AND currency = 'usdc' FOR UPDATE`,
    [accountId],
  );
  return locker;
}

interface Payer {
  account: Account;
  key: string;
  fundedMicro: bigint;
  posts: number;
}

type Outcome =
  | { kind: 'none' } // connection reset, refused, 5xx, 409 in progress: not final
  | { kind: 'final'; status: number; replayed: boolean; body: { id?: string } };

describe('an API process killed during a burst of keyed paid posts', { timeout: 240_000 }, () => {
  test('every key ends with a final answer, and per account the posts charged are the posts acknowledged', async () => {
    const payers: Payer[] = [];
    const plan: Array<[string, bigint, number]> = [
      ['kill_held_early', 5_000_000n, 3], // commits left waiting in Postgres, let through at restart
      ['kill_held_late', 5_000_000n, 3], // ... let through after the retries took the keys over
      ['kill_rich_a', 10_000_000n, 6],
      ['kill_rich_b', 10_000_000n, 6],
      ['kill_poor_a', 4_000_000n, 6], // two of its posts end 402
      ['kill_poor_b', 4_000_000n, 6],
    ];
    for (const [handle, fundedMicro, posts] of plan) {
      const account = await createAccount(env.app, { handle });
      await depositUsdc(env.app, platform, account, fundedMicro);
      payers.push({
        account,
        key: (await createApiKey(env.app.apiKeys, account.id)).key,
        fundedMicro,
        posts,
      });
    }
    const [heldEarly, heldLate] = payers;
    const lockEarly = await holdBalanceRow(heldEarly!.account.id);
    const lockLate = await holdBalanceRow(heldLate!.account.id);

    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    api = await startApi(port);

    const requests = payers.flatMap((payer) =>
      Array.from({ length: payer.posts }, (_, i) => ({
        payer,
        key: `burst-${payer.account.handle}-${i}`,
        body: { type: 'post', content: `${payer.account.handle} post ${i}` },
      })),
    );
    let conflicts = 0;
    const attempt = async (request: (typeof requests)[number]): Promise<Outcome> => {
      try {
        const response = await fetch(`${base}/api/v1/posts`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${request.payer.key}`,
            'content-type': 'application/json',
            'idempotency-key': request.key,
          },
          body: JSON.stringify(request.body),
        });
        const text = await response.text();
        if (response.status === 409) conflicts++;
        if (response.status >= 500 || response.status === 409) return { kind: 'none' };
        return {
          kind: 'final',
          status: response.status,
          replayed: response.headers.get('idempotent-replayed') === 'true',
          body: JSON.parse(text) as { id?: string },
        };
      } catch {
        return { kind: 'none' }; // the process died under it, or is not listening yet
      }
    };

    // The burst, with no payments worker: a committed post waits for the chain, unanswered.
    const unlocked = payers.slice(2).map((payer) => payer.account.id);
    const burst = requests.map(attempt);
    const deadline = Date.now() + 10_000;
    for (;;) {
      const committed = await env.app.db
        .selectFrom('posts')
        .select(env.app.db.fn.countAll<string>().as('n'))
        .where('author_id', 'in', unlocked)
        .executeTakeFirstOrThrow();
      if (Number(committed.n) >= 8 || Date.now() > deadline) break;
      await sleep(20);
    }
    await killChild(api);
    const killedAt = Date.now();
    const first = await Promise.all(burst);
    const answeredBeforeKill = first.filter((outcome) => outcome.kind === 'final').length;

    worker = await startWorkerRole(env.app, processorsFor(env.app));
    api = await startApi(port);
    await lockEarly.query('ROLLBACK');

    // The other held account's commits go through only once the dead requests' leases ran out
    // (renewed at the latest just before the kill) and the retries took their keys over.
    const lateReleased = (async () => {
      await sleep(killedAt + idempotencyLeaseMs(WRITE_TIMEOUT_MS) + 2_000 - Date.now());
      await lockLate.query('ROLLBACK');
    })();

    // The careful client: every key without a final answer, again with the same key, until final.
    const retryDeadline = Date.now() + 120_000;
    const finals = await Promise.all(
      requests.map(async (request, i) => {
        let outcome = first[i]!;
        while (outcome.kind === 'none') {
          if (Date.now() > retryDeadline) throw new Error(`${request.key}: no final answer within 120 s`);
          await sleep(200);
          outcome = await attempt(request);
        }
        return { request, outcome, retried: first[i]!.kind === 'none' };
      }),
    );
    await lateReleased;
    await paymentsSettled(env.app.db, 60_000);

    let resumed = 0;
    let rerun = 0;
    for (const payer of payers) {
      const answers = finals.filter((final) => final.request.payer === payer);
      const acknowledged = answers.flatMap(({ outcome }) =>
        outcome.kind === 'final' && outcome.status < 300 ? [outcome.body.id!] : [],
      );
      for (const { outcome, retried } of answers) {
        if (outcome.kind !== 'final') continue;
        expect([201, 202, 402]).toContain(outcome.status);
        if (!retried || outcome.status >= 300) continue;
        if (outcome.replayed) resumed++;
        else rerun++;
      }
      expect(new Set(acknowledged).size).toBe(acknowledged.length); // one post per key
      const charged = await env.app.db
        .selectFrom('posts')
        .innerJoin('chain_transactions', 'chain_transactions.movement_id', 'posts.movement_id')
        .select(['posts.id', 'chain_transactions.status'])
        .where('posts.author_id', '=', payer.account.id)
        .execute();
      expect(
        charged
          .map((post) => post.status)
          .every((status) => status === 'confirmed' || status === 'finalized'),
      ).toBe(true);
      expect(charged.map((post) => post.id).sort()).toEqual([...acknowledged].sort());
      const expectedMicro = payer.fundedMicro - 1_000_000n * BigInt(acknowledged.length);
      expect((await env.app.ledger.money(payer.account.id)).availableMicro).toBe(expectedMicro);
      expect(await onChainUsdc(env.app, platform, payer.account.walletAddress)).toBe(expectedMicro);
    }
    // The poor accounts ran out: 4 posts each, the rest 402.
    for (const payer of payers.slice(4)) {
      expect(await env.app.ledger.money(payer.account.id)).toMatchObject({ availableMicro: 0n });
    }
    // Both ways a dead request's key ends were taken: answered from the committed post, run anew.
    expect(resumed).toBeGreaterThan(0);
    expect(rerun).toBeGreaterThan(0);
    console.log(
      `keys: ${requests.length}; answered before the kill: ${answeredBeforeKill}; after it: ` +
        `${resumed} answered from a dead request's commit, ${rerun} run anew; 409s met while retrying: ${conflicts}`,
    );
  });
});
