import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { shipBatch } from '../src/app/indexer/event-shipper.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { shortChangedPost } from '../test/support/chain-tampering.js';
import { reconcileUntilQuiet } from '../test/support/reconcile-rounds.js';
import { openServiceHarness, type Member, type ServiceHarness } from '../test/support/service-harness.js';
import { paymentsSettled } from '../test/support/settled.js';
import { until } from '../test/support/until.js';

/**
 * The examples as a user runs them: each a child process (`node --import tsx examples/x.ts`)
 * importing '@ledgerfeed/client' (tsx resolves it to the client's source by tsconfig's `paths`,
 * so no build runs first), against the real service of this file (API, worker, localnet),
 * with assertions on what the service holds afterwards, not only on what the script printed.
 */
const root = fileURLToPath(new URL('..', import.meta.url));
const today = new Date().toISOString().slice(0, 10);
let h: ServiceHarness;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '100' });
});
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await h?.close();
});

/** A running example: its output so far, line by line, and its exit. */
function start(script: string, env: Record<string, string>, args: string[] = []) {
  const child = spawn(process.execPath, ['--import', 'tsx', `examples/${script}`, ...args], {
    cwd: root,
    env: { ...process.env, LEDGERFEED_URL: h.base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => (out.stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (out.stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      children.delete(child);
      resolve(code);
    }),
  );
  return { child, out, exited, lines: () => out.stdout.split('\n').filter((line) => line !== '') };
}

/** Runs an example to its end (killed past `ms`). */
async function run(script: string, env: Record<string, string>, ms = 150_000) {
  const running = start(script, env);
  const timer = setTimeout(() => running.child.kill('SIGKILL'), ms);
  const code = await running.exited;
  clearTimeout(timer);
  return { code, ...running.out };
}

/** GET /finance/reconciliation's JSON, the fields compared here. */
interface Report {
  ledger_total_usd: number;
  chain_total_usd: number;
  matched: number;
  exception_counts: Record<string, number>;
  payment_counts: Record<'pending' | 'confirmed' | 'finalized' | 'failed', number>;
  exceptions: unknown[];
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function json(response: Response): Promise<any> {
  expect(response.status, await response.clone().text()).toBeLessThan(300);
  return response.json();
}

describe('examples', () => {
  test('creator-post: posts, follows the payment to finalized; the post and its finalized payment exist', async () => {
    const creator = await h.member('ex_creator', 5_000_000n);
    const result = await run('creator-post.ts', { LEDGERFEED_API_KEY: creator.key });
    expect(result.code, result.stderr).toBe(0);
    // The states in order, each once: whatever the first look saw, the last is finalized.
    const states = result.stdout.split('\n').filter((line) => line.startsWith('state '));
    expect(states.at(-1)).toBe('state finalized');
    expect(new Set(states).size).toBe(states.length);
    const postId = /^post (\S+)$/m.exec(result.stdout)?.[1];
    const swapTx = /^swap_tx (\S+)$/m.exec(result.stdout)?.[1];
    expect(postId && swapTx, result.stdout).toBeTruthy();

    const post = await json(await h.call(creator, 'GET', `/posts/${postId}`));
    expect(post).toMatchObject({ id: postId, author: { handle: 'ex_creator' } });
    expect(post.content).toMatch(/^Posted from examples\/creator-post\.ts at /);
    const payment = await json(await h.call(creator, 'GET', `/payments/${swapTx}`));
    expect(payment).toMatchObject({ swap_tx: swapTx, status: 'finalized', related_post_id: postId });
  }, 180_000);

  test('creator-post: a refusal exits non-zero with the API error', async () => {
    const broke = await h.member('ex_broke', 0n);
    const result = await run('creator-post.ts', { LEDGERFEED_API_KEY: broke.key });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/^failed: insufficient_balance: /m);
  });

  test("finance-reconciliation: the day's report as the API answers it, and the day's exception", async () => {
    const app = h.env.app;
    const financeAccount = await createAccount(app, { handle: 'ex_finance', role: 'finance' });
    const finance: Member = {
      account: financeAccount,
      key: (await createApiKey(app.apiKeys, financeAccount.id, ['read'])).key,
    };
    const payer = await h.member('ex_payer', 5_000_000n);
    expect((await h.call(payer, 'POST', '/posts', { type: 'post', content: 'matched' })).status).toBe(201);
    // One payment whose chain transfer differs from its ledger legs: an amount_mismatch exception.
    const { signature } = await shortChangedPost(app, h.platform, payer.account);

    // Every payment of the day finalized, then reconciled and shipped: the report stands still.
    await paymentsSettled(app.db);
    const report = async (): Promise<Report> =>
      (await json(await h.call(finance, 'GET', `/finance/reconciliation?date=${today}`))) as Report;
    await until(
      "the day's payments finalized",
      report,
      (r) => r.payment_counts.pending === 0 && r.payment_counts.confirmed === 0,
    );
    await reconcileUntilQuiet(app, { finalizedRecheckMs: 0 });
    for (;;) {
      const shipped = await shipBatch(app);
      if (shipped.events === 0 && shipped.legs === 0) break;
    }

    const result = await run('finance-reconciliation.ts', { LEDGERFEED_API_KEY: finance.key });
    expect(result.code, result.stderr).toBe(0);
    const direct = await report();
    expect(direct.exception_counts.amount_mismatch).toBe(1);
    const p = direct.payment_counts;
    for (const line of [
      `reconciliation ${today}`,
      `ledger total $${direct.ledger_total_usd}, chain total $${direct.chain_total_usd}`,
      `matched ${direct.matched}`,
      `exceptions by status: ${Object.entries(direct.exception_counts)
        .map(([status, n]) => `${status} ${String(n)}`)
        .join(', ')}`,
      `payments: pending ${p.pending}, confirmed ${p.confirmed}, finalized ${p.finalized}, failed ${p.failed}`,
      `${direct.exceptions.length} exception(s) listed`,
    ]) {
      expect(result.stdout.split('\n'), result.stdout).toContain(line);
    }
    expect(result.stdout).toContain(
      `exception amount_mismatch ${signature} ledger 1000000 chain 600000 µUSD`,
    );

    // A key of an account without the role: 403, said on stderr, exit non-zero.
    const refused = await run('finance-reconciliation.ts', { LEDGERFEED_API_KEY: payer.key });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/^failed: forbidden: /m);
  }, 180_000);

  test('webhook-receiver: each event printed once, a replay printed as duplicates, a bad signature 400', async () => {
    const owner = await h.member('ex_hooks', 5_000_000n);
    const port = await freePort();
    const hook = await json(
      await h.call(owner, 'POST', '/webhooks', { url: `http://127.0.0.1:${port}/hook` }),
    );
    const receiver = start('webhook-receiver.ts', {
      PORT: String(port),
      LEDGERFEED_WEBHOOK_SECRET: hook.secret,
    });
    await until(
      'the receiver listening',
      () => Promise.resolve(receiver.lines()),
      (lines) => lines.length > 0,
      30_000,
    );
    expect(receiver.lines()[0]).toBe(`listening on http://127.0.0.1:${port}`);

    // A paid post: payment.confirmed, then payment.finalized, in the owner's log and to the hook.
    const paid = await json(await h.call(owner, 'POST', '/posts', { type: 'post', content: 'hooked' }));
    const printed = await until(
      'payment.finalized received',
      () => Promise.resolve(receiver.lines()),
      (lines) => lines.some((line) => / payment\.finalized$/.test(line)),
    );
    const log = (await json(await h.call(owner, 'GET', '/events?limit=100'))).events as Array<{
      id: string;
      sequence: number;
      type: string;
      data: Record<string, unknown>;
    }>;
    const received = printed.filter((line) => /^\d+ /.test(line));
    expect(received).toContain(
      `${log.find((e) => e.type === 'payment.confirmed')!.sequence} payment.confirmed`,
    );
    expect(new Set(received).size).toBe(received.length);
    // Every line printed is an event of the log, and the payment's events are the post's.
    for (const line of received) {
      expect(log.map((e) => `${e.sequence} ${e.type}`)).toContain(line);
    }
    expect(log.filter((e) => e.type.startsWith('payment.')).map((e) => e.data.swap_tx)).toContain(
      paid.swap_tx,
    );

    // Replay the whole log: what was received comes again and is ignored as a duplicate.
    expect((await h.call(owner, 'POST', `/webhooks/${hook.id}/replay`, {})).status).toBe(202);
    const lastSequence = Math.max(...log.map((e) => e.sequence));
    const afterReplay = await until(
      'the replay received',
      () => Promise.resolve(receiver.lines()),
      (lines) => lines.some((line) => line.startsWith(`duplicate ${lastSequence} `)),
    );
    const newLines = afterReplay.filter((line) => /^\d+ /.test(line));
    expect(new Set(newLines).size).toBe(newLines.length);
    for (const line of received) {
      const [sequence, type] = line.split(' ');
      expect(afterReplay.filter((l) => l.startsWith(`duplicate ${sequence} ${type} `))).toHaveLength(1);
    }

    // A delivery signed with another secret: 400, nothing handled.
    const forged = JSON.stringify({ id: 'evt_forged', type: 'post.liked', sequence: 999, data: {} });
    const answer = await fetch(`http://127.0.0.1:${port}/hook`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'ledgerfeed-signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}`,
      },
      body: forged,
    });
    expect(answer.status).toBe(400);
    expect(await answer.json()).toMatchObject({ error: 'invalid_signature' });
    expect(receiver.lines().some((line) => line.includes('999'))).toBe(false);

    // SIGTERM: the server closes and the process exits 0.
    receiver.child.kill('SIGTERM');
    expect(await receiver.exited).toBe(0);
  }, 180_000);
});
