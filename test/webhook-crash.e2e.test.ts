import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createWebhook } from '../src/app/webhooks/manage-webhooks.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { ALL_SCOPES } from '../src/domain/auth/api-key.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';
import { until } from './support/until.js';
import { killChild, startRoleChild } from './support/role-child.js';
import { likes, stageEvents } from './support/staged-events.js';
import { startWebhookReceiver, verifiedWith, type WebhookReceiver } from './support/webhook-receiver.js';

/**
 * The worker role as a real process (`src/main.ts --only worker`), killed with SIGKILL while a
 * delivery is in flight (the receiver holds the request unanswered). After a restart the receiver
 * has every event, in order, and the only duplicate is the delivery that was in flight.
 */
let env: TestEnv;
let hook: WebhookReceiver | undefined;
const children: ChildProcessWithoutNullStreams[] = [];

beforeAll(async () => {
  env = await openTestEnv({}, { chain: true });
  await env.app.bootstrapChain();
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await hook?.close();
  await env?.close();
});

const startWorker = () =>
  startRoleChild(env, 'worker', children, { CREATOR_FUND_ENABLED: 'false', WEBHOOK_ALLOW_LOOPBACK: 'true' });

/** `count` events staged for the account: the worker's sequencer numbers them into its log. */
async function stage(accountId: string, count: number): Promise<void> {
  await stageEvents(env.app.db, likes(accountId, count));
}

describe('webhook delivery across a crash', { timeout: 180_000 }, () => {
  test('killed with SIGKILL mid-delivery: after a restart nothing is missing, only the one in flight twice', async () => {
    const account = await createAccount(env.app, { handle: 'hook_crash' });
    const owner = { accountId: account.id, scopes: new Set(ALL_SCOPES) };
    let stalled = false;
    // Event 40 is held unanswered the first time: the worker dies with it in flight.
    hook = await startWebhookReceiver((request) => {
      if (request.event.sequence === 40 && !stalled) {
        stalled = true;
        return 'stall';
      }
      return 200;
    });
    const { secret } = await createWebhook(
      { db: env.app.db, webhookUrlPolicy: env.app.webhookUrlPolicy, webhookSecrets: env.app.webhookSecrets },
      owner,
      {
        url: hook.url,
      },
    );
    await stage(account.id, 100);

    const first = await startWorker();
    await until(
      'the delivery of event 40 in flight',
      () => Promise.resolve(stalled),
      (held) => held,
      60_000,
    );
    await sleep(200);
    await killChild(first);
    expect(hook.delivered()).toEqual(Array.from({ length: 39 }, (_, n) => n + 1));

    await stage(account.id, 100); // more while no worker runs
    const second = await startWorker();
    await until(
      'every event',
      () => Promise.resolve(hook!.delivered().length),
      (n) => n >= 200,
      90_000,
    );
    await sleep(500);
    await killChild(second);

    expect(hook.delivered()).toEqual(Array.from({ length: 200 }, (_, n) => n + 1));
    const sent = new Map<number, number>();
    for (const request of hook.requests)
      sent.set(request.event.sequence, (sent.get(request.event.sequence) ?? 0) + 1);
    expect([...sent].filter(([, times]) => times > 1)).toEqual([[40, 2]]);
    for (const request of hook.requests) {
      expect(verifiedWith(secret, request.headers['ledgerfeed-signature'], request.rawBody)).toBe(true);
    }
    const endpoint = await env.app.db
      .selectFrom('webhook_endpoints')
      .select(['delivered_through', 'attempt'])
      .where('account_id', '=', account.id)
      .executeTakeFirstOrThrow();
    expect(endpoint).toEqual({ delivered_through: 200n, attempt: 0 });
  });
});
