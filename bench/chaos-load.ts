import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PaidWrite } from './chaos-books.js';
import { send, type Attempt, type ClientOptions } from './chaos-client.js';
import type { Member } from './funded-accounts.js';

const WRITE_MICRO = 1_000_000n;
/** Half of a reply's or repost's price goes to the parent's author (PARENT_AUTHOR_SHARE_BPS). */
const SHARE_MICRO = 500_000n;
const SEND_USD = 0.1;
const SEND_MICRO = 100_000n;

/**
 * The steady mixed load: `clients` loops, each picking a random member and action (posts,
 * replies, reposts, sends, likes) with a short pause, until `stop()`. Paid writes are retried by
 * the careful client until final; their outcomes feed the book checks.
 */
export class ChaosLoad {
  readonly attempts: Attempt[] = [];
  readonly writes: PaidWrite[] = [];
  private readonly posts: Array<{ id: string; author: Member }> = [];
  private stopping = false;
  private stopAt = Infinity;
  private loops: Promise<void>[] = [];
  private readonly client: ClientOptions;

  constructor(
    private readonly members: Member[],
    base: () => string,
    timeoutMs: number,
  ) {
    this.client = {
      base,
      timeoutMs,
      record: (attempt) => this.attempts.push(attempt),
      // Keys still unanswered 120 s after the load stopped are reported, not waited on forever.
      giveUpAt: () => this.stopAt + 120_000,
    };
  }

  start(clients: number, pauseMs: number): void {
    this.loops = Array.from({ length: clients }, async () => {
      while (!this.stopping) {
        await this.one();
        await sleep(pauseMs);
      }
    });
  }

  /** Stops starting requests; resolves when every loop's last write has its final answer. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.stopAt = Date.now();
    await Promise.all(this.loops);
  }

  private pick<T>(list: readonly T[]): T {
    return list[Math.floor(Math.random() * list.length)]!;
  }

  private async one(): Promise<void> {
    const who = this.pick(this.members);
    const roll = Math.random();
    const target = this.posts.length > 0 ? this.pick(this.posts.slice(-50)) : undefined;
    if (roll < 0.3 || !target) {
      await this.paid(who, 'post', 'POST', '/posts', { type: 'post', content: `chaos post ${randomUUID()}` });
    } else if (roll < 0.5) {
      await this.paid(
        who,
        'reply',
        'POST',
        '/posts',
        { type: 'reply', content: `chaos reply ${randomUUID()}`, parent_id: target.id },
        target.author,
      );
    } else if (roll < 0.6) {
      await this.paid(who, 'repost', 'POST', `/posts/${target.id}/repost`, undefined, target.author);
    } else if (roll < 0.75) {
      const to = this.pick(this.members.filter((m) => m !== who));
      await this.paid(
        who,
        'send',
        'POST',
        '/send',
        { to_handle: to.account.handle, amount_usd: SEND_USD },
        to,
      );
    } else {
      // Likes are free and idempotent: sent once, recorded, never retried.
      await send(this.client, who.key, 'POST', `/posts/${target.id}/like`, undefined);
    }
  }

  private async paid(
    who: Member,
    kind: PaidWrite['kind'],
    method: string,
    path: string,
    body: unknown,
    creditTo?: Member,
  ): Promise<void> {
    const debitMicro = kind === 'send' ? SEND_MICRO : WRITE_MICRO;
    // A share goes to the parent's author unless it is the payer; a send credits its recipient.
    const creditMicro = kind === 'send' ? SEND_MICRO : creditTo && creditTo !== who ? SHARE_MICRO : 0n;
    const write: PaidWrite = {
      idempotencyKey: randomUUID(),
      kind,
      who,
      debitMicro,
      ...(creditTo && creditMicro > 0n ? { credit: { to: creditTo, micro: creditMicro } } : {}),
    };
    this.writes.push(write);
    const { final, kinds } = await send(this.client, who.key, method, path, body, write.idempotencyKey);
    write.attempts = kinds;
    if (!final) return;
    const signature = typeof final.body.swap_tx === 'string' ? final.body.swap_tx : undefined;
    write.final = { status: final.status, ...(signature ? { signature } : {}) };
    if (final.status < 300 && (kind === 'post' || kind === 'reply') && typeof final.body.id === 'string') {
      this.posts.push({ id: final.body.id, author: who });
    }
  }
}
