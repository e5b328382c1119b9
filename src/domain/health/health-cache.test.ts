import { describe, expect, test } from 'vitest';
import { cachedHealthCheck } from './health-cache.js';
import type { HealthReport } from './health.service.js';

function countingCheck() {
  const calls = { count: 0 };
  let release: () => void = () => {};
  const check = () => {
    calls.count += 1;
    return new Promise<HealthReport>((resolve) => {
      release = () => resolve({ status: 'ok', checkedAt: new Date(), dependencies: [] });
    });
  };
  return { calls, check, release: () => release() };
}

describe('cachedHealthCheck', () => {
  test('callers arriving while a run is under way share it', async () => {
    const { calls, check, release } = countingCheck();
    const cached = cachedHealthCheck(check, { maxAgeMs: 2_000 });
    const pending = Array.from({ length: 500 }, () => cached());
    release();
    const reports = await Promise.all(pending);
    expect(calls.count).toBe(1);
    expect(new Set(reports).size).toBe(1);
  });

  test('answers the last report until it is maxAgeMs old, then probes again', async () => {
    let clock = 0;
    const { calls, check, release } = countingCheck();
    const cached = cachedHealthCheck(check, { maxAgeMs: 2_000, now: () => clock });
    const first = cached();
    release();
    const report = await first;
    clock = 1_999;
    expect(await cached()).toBe(report);
    expect(calls.count).toBe(1);
    clock = 2_000;
    const second = cached();
    release();
    expect(await second).not.toBe(report);
    expect(calls.count).toBe(2);
  });

  test('a failed run is not kept: the next caller probes again', async () => {
    let fail = true;
    let calls = 0;
    const cached = cachedHealthCheck(
      () => {
        calls += 1;
        return fail
          ? Promise.reject(new Error('boom'))
          : Promise.resolve<HealthReport>({ status: 'ok', checkedAt: new Date(), dependencies: [] });
      },
      { maxAgeMs: 60_000 },
    );
    await expect(cached()).rejects.toThrow('boom');
    fail = false;
    await expect(cached()).resolves.toMatchObject({ status: 'ok' });
    expect(calls).toBe(2);
  });
});
