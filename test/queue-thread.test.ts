import { existsSync, readdirSync } from 'node:fs';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startQueueThread } from '../workers/queue-thread.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

/*
 * A queue thread (workers/queue-thread.ts) that dies is logged and started again, its logs come out
 * through the parent's logger at their level and tagged with the thread, and a stop asks it to
 * close (it finishes its jobs and closes its clients) before ending it.
 */
let env: TestEnv;

beforeAll(async () => {
  env = await openTestEnv();
});
afterAll(async () => {
  await env?.close();
});

test('a thread that dies is started again; its logs reach the parent; a stop closes it', async () => {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const log = pino({ level: 'info' }, sink);
  const starts = () => readdirSync(env.config.dataDir).filter((name) => name.startsWith('started-')).length;

  const thread = await startQueueThread(
    env.app,
    {
      queue: 'test-queue',
      concurrency: 1,
      process: async () => {},
      thread: { count: 1, baseUrl: import.meta.url, module: 'support/crash-once.thread' },
    },
    1,
    log,
  );
  try {
    await expect.poll(starts, { timeout: 20_000 }).toBe(2);
    // The second start stays up: no third within a few restart pauses.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(starts()).toBe(2);

    const started = lines.filter((line) => line.msg === 'crash-once thread started');
    expect(started.map((line) => [line.level, line.thread, line.firstStart])).toEqual([
      [40, 'test-queue thread 1', true],
      [40, 'test-queue thread 1', false],
    ]);
    expect(
      lines.some(
        (line) => line.level === 50 && String(line.msg).startsWith('test-queue thread 1 ended unexpectedly'),
      ),
    ).toBe(true);
  } finally {
    await thread.stop();
  }
  expect(existsSync(`${env.config.dataDir}/closed`)).toBe(true);
});
