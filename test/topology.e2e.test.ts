import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, test } from 'vitest';
import { createRpcClient } from '../src/adapters/solana/index.js';
import { freePort, freePortPair } from '../src/devstack/free-port.js';
import { walletTokens } from './support/balances.js';

/**
 * The roles as separate processes on real servers, as compose runs them: the localnet started on
 * its own and posing as a validator we do not control (`--plain-validator`), the machine's own
 * PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379), one process running worker and indexer
 * (it holds the embedded ClickHouse folder) and two `api` processes without ClickHouse. From an
 * empty database: bootstrap, faucet, paid posts through either API, and the books close.
 */
const MACHINE_POSTGRES = process.env.TOPOLOGY_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const MACHINE_REDIS = process.env.TOPOLOGY_REDIS_URL ?? 'redis://127.0.0.1:6379';
const root = mkdtempSync(path.join(os.tmpdir(), 'ledgerfeed-topology-'));
const database = `lftopo_${randomBytes(4).toString('hex')}`;
const started: Started[] = [];

interface Started {
  name: string;
  child: ChildProcessWithoutNullStreams;
  output: () => string;
}

function start(name: string, args: string[], env: Record<string, string>): Started {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', LOG_LEVEL: 'warn', ...env },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const process_ = { name, child, output: () => output };
  started.push(process_);
  return process_;
}

async function ready(p: Started, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!p.output().includes('Press Ctrl-C to stop.')) {
    if (p.child.exitCode !== null) throw new Error(`${p.name} exited:\n${p.output()}`);
    if (Date.now() > deadline) throw new Error(`${p.name} not ready in ${timeoutMs} ms:\n${p.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      throw new Error(
        `${what}: not within ${timeoutMs} ms\n${started.map((p) => `--- ${p.name}\n${p.output().slice(-3000)}`).join('\n')}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function withDb<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

afterAll(async () => {
  await Promise.all(
    started.map(async (p) => {
      if (p.child.exitCode !== null) return;
      const exited = new Promise((resolve) => p.child.once('exit', resolve));
      p.child.kill('SIGINT');
      const timer = setTimeout(() => p.child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    }),
  );
  await withDb(MACHINE_POSTGRES, (admin) =>
    admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`),
  ).catch(() => {});
  rmSync(root, { recursive: true, force: true });
});

describe('split roles on real servers', { timeout: 400_000 }, () => {
  test('two apis, a worker+indexer and a plain validator bootstrap from nothing, take payments and close the books', async () => {
    await withDb(MACHINE_POSTGRES, (admin) =>
      admin.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`),
    );
    const databaseUrl = MACHINE_POSTGRES.replace(/\/[^/]*$/, `/${database}`);
    const localnetPort = await freePortPair();
    const chain = start('localnet', ['src/cli/localnet.ts', '--plain-validator'], {
      DATA_DIR: path.join(root, 'chain'),
      LOCALNET_PORT: String(localnetPort),
    });
    await ready(chain);
    const shared = {
      DATABASE_URL: databaseUrl,
      REDIS_URL: MACHINE_REDIS,
      REDIS_PREFIX: `lftopo${randomBytes(3).toString('hex')}`,
      SOLANA_RPC_URL: `http://127.0.0.1:${localnetPort}`,
      WALLET_MASTER_KEY: randomBytes(32).toString('hex'),
      RATE_LIMIT_MULTIPLIER: '0',
      CREATOR_FUND_ENABLED: 'false',
      HOST: '127.0.0.1',
      // As a deployment on a busy cluster would: every payment carries a compute-unit price, and is
      // confirmed and reconciled all the same.
      SOLANA_PRIORITY_FEE: '2000',
    };
    const rpc = createRpcClient(shared.SOLANA_RPC_URL);
    // The worker and indexer first: they migrate and bootstrap the chain from nothing.
    const healthPort = await freePort();
    const back = start('worker+indexer', ['src/main.ts', '--only', 'worker,indexer'], {
      ...shared,
      DATA_DIR: path.join(root, 'worker'),
      HEALTH_PORT: String(healthPort),
    });
    await ready(back);
    expect(back.output()).toMatch(/Cluster\s+local-validator/);
    const apis = await Promise.all(
      ['api-1', 'api-2'].map(async (name) => {
        const port = await freePort();
        const api = start(name, ['src/main.ts', '--only', 'api'], {
          ...shared,
          DATA_DIR: path.join(root, name),
          PORT: String(port),
        });
        return { api, base: `http://127.0.0.1:${port}` };
      }),
    );
    for (const { api } of apis) await ready(api);
    const usdcMint = /USDC mint\s+(\S+) \(our own test USDC/.exec(apis[0]!.api.output())?.[1];
    expect(usdcMint, apis[0]!.api.output()).toBeDefined();
    expect(apis[0]!.api.output()).toMatch(/ClickHouse\s+none/);

    // Every role answers /healthz and /metrics (the apis report ClickHouse as not configured).
    for (const base of [...apis.map((a) => a.base), `http://127.0.0.1:${healthPort}`]) {
      const health = await fetch(`${base}/healthz`);
      expect(health.status, base).toBe(200);
      const metrics = await (await fetch(`${base}/metrics`)).text();
      expect(metrics, base).toMatch(/^ledgerfeed_queue_jobs\{queue="payments",state="waiting"\} \d+$/m);
    }
    const apiHealth = (await (await fetch(`${apis[0]!.base}/healthz`)).json()) as {
      dependencies: { clickhouse: { status: string } };
    };
    expect(apiHealth.dependencies.clickhouse.status).toBe('not_configured');

    // Members sign up and get $10 from the faucet, alternately through each API.
    const members: Array<{ handle: string; key: string; wallet: string }> = [];
    for (let k = 0; k < 4; k++) {
      const base = apis[k % 2]!.base;
      const signUp = await fetch(`${base}/api/v1/accounts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ handle: `topo_member_${k}` }),
      });
      expect(signUp.status, await signUp.clone().text()).toBe(201);
      const body = (await signUp.json()) as { api_key: string; account: { wallet_address: string } };
      const member = { handle: `topo_member_${k}`, key: body.api_key, wallet: body.account.wallet_address };
      members.push(member);
      const grant = await fetch(`${apis[(k + 1) % 2]!.base}/graphql`, {
        method: 'POST',
        headers: { authorization: `Bearer ${member.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'mutation { devFaucet { signature } }' }),
      });
      const granted = (await grant.json()) as { errors?: unknown[] };
      expect(granted.errors, JSON.stringify(granted)).toBeUndefined();
    }

    // Paid posts through either API: 3 per member.
    let paid = 0;
    for (let round = 0; round < 3; round++) {
      await Promise.all(
        members.map(async (member, k) => {
          const response = await fetch(`${apis[(k + round) % 2]!.base}/api/v1/posts`, {
            method: 'POST',
            headers: {
              authorization: `Bearer ${member.key}`,
              'content-type': 'application/json',
              'idempotency-key': `topo-${member.handle}-${round}`,
            },
            body: JSON.stringify({ content: `round ${round} from ${member.handle}`, type: 'post' }),
          });
          expect([201, 202], await response.clone().text()).toContain(response.status);
          paid++;
        }),
      );
    }
    expect(paid).toBe(12);

    // The books close: every outbox row confirmed, ledger = chain per member, reconciled matched.
    const outbox = await until('every payment confirmed', () =>
      withDb(databaseUrl, async (db) => {
        const rows = (await db.query<{ status: string }>('SELECT status FROM chain_transactions')).rows;
        return rows.length === 12 && rows.every((r) => r.status === 'confirmed' || r.status === 'finalized')
          ? rows.length
          : undefined;
      }),
    );
    expect(outbox).toBe(12);
    // Each payment set its compute-unit price first (SOLANA_PRIORITY_FEE).
    const signatures = await withDb(databaseUrl, async (db) =>
      (await db.query<{ signature: string }>('SELECT signature FROM chain_transactions')).rows.map(
        (r) => r.signature,
      ),
    );
    for (const signature of signatures) {
      const { message } = (
        await rpc.call<{
          transaction: {
            message: { accountKeys: string[]; instructions: Array<{ programIdIndex: number }> };
          };
        }>('getTransaction', [signature, { encoding: 'json', commitment: 'confirmed' }])
      ).transaction;
      expect(message.accountKeys[message.instructions[0]!.programIdIndex], signature).toBe(
        'ComputeBudget111111111111111111111111111111',
      );
    }
    for (const member of members) {
      const ledger = await withDb(
        databaseUrl,
        async (db) =>
          (
            await db.query<{ balance: string }>(
              `SELECT la.balance::text AS balance FROM ledger_accounts la JOIN accounts a ON a.id = la.account_id
              WHERE a.handle = $1 AND la.currency = 'usdc'`,
              [member.handle],
            )
          ).rows[0]?.balance,
      );
      const onChain = await walletTokens(rpc, member.wallet, usdcMint!);
      expect(ledger, member.handle).toBe('7000000');
      expect(onChain, member.handle).toBe(7_000_000n);
    }
    const matched = await until('every payment reconciled matched', async () => {
      const metrics = await (await fetch(`http://127.0.0.1:${healthPort}/metrics`)).text();
      const count = (status: string) =>
        [
          ...metrics.matchAll(
            new RegExp(
              `^ledgerfeed_reconciliations_total\\{status="${status}",commitment="confirmed"\\} (\\d+)$`,
              'gm',
            ),
          ),
        ]
          .map((m) => Number(m[1]))
          .reduce((a, b) => a + b, 0);
      for (const bad of ['amount_mismatch', 'wrong_party', 'failed_on_chain', 'missing', 'unexplained'])
        expect(count(bad), `${bad}\n${metrics}`).toBe(0);
      return count('matched') >= 12 ? count('matched') : undefined;
    });
    expect(matched).toBeGreaterThanOrEqual(12);
  });
});
