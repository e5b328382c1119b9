import { sql } from 'kysely';
import type { PublicKey } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Scope } from '../src/domain/auth/api-key.js';
import { onChainUsdc as onChainUsdcOf, settledMoney } from './support/balances.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';

let h: ServiceHarness;

beforeAll(async () => {
  // Limits off: the race test sends several reposts at once from one account.
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
});
afterAll(async () => {
  await h?.close();
});

/** Every member of this file, for the final ledger = chain check. */
const members: Member[] = [];

async function member(handle: string, usdMicro: bigint, scopes?: Scope[]): Promise<Member> {
  const created = await h.member(handle, usdMicro, scopes);
  members.push(created);
  return created;
}

const repost = (who: Member, postId: string) => h.call(who, 'POST', `/posts/${postId}/repost`);
const like = (who: Member, postId: string) => h.call(who, 'POST', `/posts/${postId}/like`);
const unlike = (who: Member, postId: string) => h.call(who, 'DELETE', `/posts/${postId}/like`);

const onChainUsdc = (owner: string | PublicKey) => onChainUsdcOf(h.env.app, h.platform, owner);

const available = async (who: Member) => (await settledMoney(h.env.app, who.account.id)).availableMicro;

async function legSum(): Promise<string | undefined> {
  const { rows } = await sql<{
    total: string;
  }>`SELECT coalesce(sum(amount), 0)::text AS total FROM ledger_legs`.execute(h.env.app.db);
  return rows[0]?.total;
}

const repostMovements = async (who: Member) =>
  (
    await h.env.app.db
      .selectFrom('reposts')
      .select('movement_id')
      .where('reposter_id', '=', who.account.id)
      .execute()
  ).length;

const UNKNOWN = '00000000-0000-4000-8000-000000000000';

describe('reposts and likes through the REST API', () => {
  let author: Member;
  let reposter: Member;
  let postId: string;

  beforeAll(async () => {
    author = await member('rl_author', 2_000_000n);
    reposter = await member('rl_reposter', 3_000_000n);
    const response = await h.call(author, 'POST', '/posts', { type: 'post', content: 'repost me' });
    expect(response.status).toBe(201);
    postId = ((await response.json()) as { id: string }).id;
  });

  test('a repost costs $1, answers exactly the Repost object, and pays the author 50% on chain', async () => {
    const treasuryBefore = await onChainUsdc(h.platform.signers.treasury.publicKey);
    const response = await repost(reposter, postId);
    expect(response.status).toBe(201);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      repost_of: postId,
      cost_usd_micro: 1_000_000,
      swap_tx: expect.stringMatching(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/),
    });
    expect(body.id).not.toBe(postId);
    // A 201 answers once the cluster executed the payment (processed); the worker then follows it
    // to confirmed, which settledMoney below waits for.
    const [status] = await h.env.app.rpc.getSignatureStatuses([body.swap_tx as string]);
    expect(status?.err).toBeNull();
    expect(['processed', 'confirmed', 'finalized']).toContain(status?.confirmationStatus);

    expect(await onChainUsdc(reposter.account.walletAddress)).toBe(2_000_000n);
    expect(await onChainUsdc(author.account.walletAddress)).toBe(1_500_000n);
    expect((await onChainUsdc(h.platform.signers.treasury.publicKey)) - treasuryBefore).toBe(500_000n);
    expect(await settledMoney(h.env.app, author.account.id)).toMatchObject({
      availableMicro: 1_500_000n,
      totalEarnedMicro: 500_000n,
    });
    expect(await settledMoney(h.env.app, reposter.account.id)).toMatchObject({
      availableMicro: 2_000_000n,
      totalSpentMicro: 1_000_000n,
    });

    const row = await h.env.app.db
      .selectFrom('reposts')
      .innerJoin('ledger_movements', 'ledger_movements.id', 'reposts.movement_id')
      .innerJoin('chain_transactions', 'chain_transactions.movement_id', 'reposts.movement_id')
      .select(['reposts.id', 'ledger_movements.kind', 'chain_transactions.signature'])
      .where('reposts.id', '=', body.id as string)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ id: body.id, kind: 'repost', signature: body.swap_tx });
    const events = await h.env.app.db
      .selectFrom('domain_events')
      .select(['type', 'actor_id', 'amount_micro'])
      .where('type', '=', 'post.reposted')
      .where('post_id', '=', postId)
      .execute();
    expect(events).toEqual([
      { type: 'post.reposted', actor_id: reposter.account.id, amount_micro: 1_000_000n },
    ]);
  });

  test('reposting the same post again is 409 and charges nothing', async () => {
    const ledgerBefore = await available(reposter);
    const chainBefore = await onChainUsdc(reposter.account.walletAddress);
    const outboxBefore = await h.env.app.db.selectFrom('chain_transactions').select('id').execute();
    const response = await repost(reposter, postId);
    expect(response.status).toBe(409);
    expect(await response.json()).toEqual({ error: 'conflict', message: expect.stringMatching(/already/) });
    expect(await available(reposter)).toBe(ledgerBefore);
    expect(await onChainUsdc(reposter.account.walletAddress)).toBe(chainBefore);
    expect(await h.env.app.db.selectFrom('chain_transactions').select('id').execute()).toHaveLength(
      outboxBefore.length,
    );
    expect(await repostMovements(reposter)).toBe(1);
  });

  test('five concurrent reposts of one post: one lands, four are 409, charged once', async () => {
    const racer = await member('rl_racer', 5_000_000n);
    const statuses = await Promise.all(
      Array.from({ length: 5 }, () => repost(racer, postId).then((r) => r.status)),
    );
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(4);
    expect(await available(racer)).toBe(4_000_000n);
    expect(await onChainUsdc(racer.account.walletAddress)).toBe(4_000_000n);
    const { rows } = await sql<{ n: string }>`
      SELECT count(*)::text AS n FROM ledger_legs l
      JOIN ledger_accounts a ON a.id = l.ledger_account_id
      WHERE a.account_id = ${racer.account.id} AND l.amount < 0`.execute(h.env.app.db);
    expect(rows[0]?.n).toBe('1');
  });

  test("reposting one's own post pays the whole dollar to the treasury", async () => {
    const before = await settledMoney(h.env.app, author.account.id);
    const treasuryBefore = await onChainUsdc(h.platform.signers.treasury.publicKey);
    const response = await repost(author, postId);
    expect(response.status).toBe(201);
    expect(await settledMoney(h.env.app, author.account.id)).toMatchObject({
      availableMicro: before.availableMicro - 1_000_000n,
      totalEarnedMicro: before.totalEarnedMicro,
    });
    expect((await onChainUsdc(h.platform.signers.treasury.publicKey)) - treasuryBefore).toBe(1_000_000n);
  });

  test('a repost without the money is 402 and leaves no repost', async () => {
    const broke = await member('rl_broke', 0n);
    const response = await repost(broke, postId);
    expect(response.status).toBe(402);
    expect(await response.json()).toMatchObject({
      error: 'insufficient_balance',
      balance_usd: 0,
      required_usd: 1,
    });
    expect(await repostMovements(broke)).toBe(0);
  });

  test('an unknown post id, or one that is not a UUID, is 404 for repost, like and unlike', async () => {
    for (const id of [UNKNOWN, 'not-a-uuid', '42']) {
      for (const response of [
        await repost(reposter, id),
        await like(reposter, id),
        await unlike(reposter, id),
      ]) {
        expect(response.status).toBe(404);
        expect(await response.json()).toMatchObject({ error: 'not_found' });
      }
    }
  });

  test('like and unlike are free and idempotent, answer the state and the like count', async () => {
    const fan = await member('rl_fan', 0n);
    const expectState = async (response: Response, liked: boolean, count: number) => {
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ liked, like_count: count });
    };
    await expectState(await like(fan, postId), true, 1);
    await expectState(await like(fan, postId), true, 1);
    await expectState(await like(reposter, postId), true, 2);
    await expectState(await unlike(fan, postId), false, 1);
    await expectState(await unlike(fan, postId), false, 1);
    await expectState(await like(fan, postId), true, 2);

    const events = await h.env.app.db
      .selectFrom('domain_events')
      .select('type')
      .where('actor_id', '=', fan.account.id)
      .where('post_id', '=', postId)
      .orderBy('occurred_at')
      .execute();
    expect(events.map((e) => e.type).sort()).toEqual(['post.liked', 'post.liked', 'post.unliked']);
    expect((await settledMoney(h.env.app, fan.account.id)).totalSpentMicro).toBe(0n);
  });

  test('likes at the same moment each answer a count that includes every like committed before theirs', async () => {
    const created = await h.call(author, 'POST', '/posts', { type: 'post', content: 'liked at once' });
    expect(created.status).toBe(201);
    const target = ((await created.json()) as { id: string }).id;
    const fans = await Promise.all(Array.from({ length: 8 }, (_, i) => member(`rl_crowd${i}`, 0n)));
    const answers = await Promise.all(fans.map((fan) => like(fan, target)));
    const counts = await Promise.all(
      answers.map(async (response) => ((await response.json()) as { like_count: number }).like_count),
    );
    // The likes of one post queue on its row: each sees its own like and those before it, so the
    // answers are 1..8 in some order (a count read from a snapshot older than the row would repeat).
    expect(counts.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  test("a key with only the 'post' scope gets 403 on repost, like and unlike", async () => {
    const limited = await member('rl_limited', 1_000_000n, ['post']);
    for (const response of [
      await repost(limited, postId),
      await like(limited, postId),
      await unlike(limited, postId),
    ]) {
      expect(response.status).toBe(403);
      expect(await response.json()).toEqual({
        error: 'forbidden',
        message: "API key lacks the 'engage' scope",
      });
    }
    expect(await available(limited)).toBe(1_000_000n);
  });

  test('at the end the ledger balances and every account equals its wallet', async () => {
    expect(await legSum()).toBe('0');
    for (const who of members) {
      expect(await available(who)).toBe(await onChainUsdc(who.account.walletAddress));
    }
  });
});
