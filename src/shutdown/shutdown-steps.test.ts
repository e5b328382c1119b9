import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, test } from 'vitest';
import { describeRunning, stopWithin, untracked } from './shutdown-steps.js';

describe('stopWithin', () => {
  test('a stop that ends in time is stopped', async () => {
    const order: string[] = [];
    const outcome = await stopWithin(async (run) => {
      await run('api', () => Promise.resolve(order.push('api')));
      await run('workers', () => Promise.resolve(order.push('workers')));
    }, 1_000);
    expect(outcome.kind).toBe('stopped');
    expect(order).toEqual(['api', 'workers']);
  });

  test('a stop that throws is failed, with its error', async () => {
    const outcome = await stopWithin(() => Promise.reject(new Error('redis gone')), 1_000);
    expect(outcome).toMatchObject({ kind: 'failed', error: new Error('redis gone') });
  });

  test('past the deadline it names the steps still running, oldest first, and not those done', async () => {
    let clock = 0;
    const outcome = await stopWithin(
      async (run) => {
        await run('api: HTTP server', () => Promise.resolve((clock += 100)));
        clock += 1_000;
        const hung = run('worker: payments jobs in hand', () => new Promise<void>(() => {}));
        clock += 500;
        const also = run('indexer: reconciler', () => new Promise<void>(() => {}));
        clock += 250;
        await Promise.all([hung, also]);
      },
      20,
      () => clock,
    );
    expect(outcome).toEqual({
      kind: 'timed out',
      running: [
        { name: 'worker: payments jobs in hand', elapsedMs: 750 },
        { name: 'indexer: reconciler', elapsedMs: 250 },
      ],
    });
  });

  test('nested steps are each named while they run', async () => {
    const outcome = await stopWithin(async (run) => {
      await run('worker', () => run('worker: creator-fund jobs in hand', () => sleep(10_000)));
    }, 30);
    expect(outcome.kind).toBe('timed out');
    if (outcome.kind === 'timed out') {
      expect(outcome.running.map((s) => s.name)).toEqual(['worker', 'worker: creator-fund jobs in hand']);
    }
  });
});

describe('describeRunning', () => {
  test('names each step with its seconds', () => {
    expect(
      describeRunning([
        { name: 'api: HTTP server (requests in flight)', elapsedMs: 12_040 },
        { name: 'worker: payments jobs in hand', elapsedMs: 9_500 },
      ]),
    ).toBe('api: HTTP server (requests in flight) (12.0 s), worker: payments jobs in hand (9.5 s)');
    expect(describeRunning([])).toMatch(/^none/);
  });
});

test('untracked runs the work as it is', async () => {
  expect(await untracked('x', () => Promise.resolve(7))).toBe(7);
});
