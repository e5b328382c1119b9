import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestEnv } from './test-env.js';

/**
 * One role as a real process (`src/main.ts --only <role>`) on the test's stack, for tests that kill
 * it with SIGKILL and start it again. Resolves once it says it is up; `children` collects it so the
 * file's afterAll can kill what a failed test left running.
 */
export async function startRoleChild(
  env: TestEnv,
  role: 'api' | 'worker' | 'indexer',
  children: ChildProcessWithoutNullStreams[],
  extra: Record<string, string> = {},
): Promise<ChildProcessWithoutNullStreams> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', '--only', role], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/root',
      DATA_DIR: env.config.DATA_DIR, // same dev wallet master key as the test's keystore
      DATABASE_URL: env.config.DATABASE_URL!,
      REDIS_URL: env.config.REDIS_URL!,
      REDIS_PREFIX: env.config.REDIS_PREFIX,
      CLICKHOUSE_DATABASE: env.config.CLICKHOUSE_DATABASE,
      SOLANA_RPC_URL: env.localnet!.rpcUrl,
      LOG_LEVEL: 'warn',
      ...extra,
    },
  });
  children.push(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 60_000;
  while (!output.includes('Press Ctrl-C')) {
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`${role} did not start:\n${output}`);
    await sleep(50);
  }
  return child;
}

/** SIGKILL, resolved once the process is gone. */
export async function killChild(child: ChildProcessWithoutNullStreams): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}
