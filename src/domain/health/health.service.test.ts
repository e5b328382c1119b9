import { describe, expect, test } from 'vitest';
import { checkHealth } from './health.service.js';

describe('checkHealth', () => {
  test('is ok only when every probe succeeds', async () => {
    const report = await checkHealth({
      timeoutMs: 100,
      probes: [
        { name: 'a', source: 'embedded', probe: () => Promise.resolve('fine') },
        { name: 'b', source: 'external', probe: () => Promise.resolve(1) },
      ],
    });
    expect(report.status).toBe('ok');
    expect(report.dependencies.map((d) => [d.name, d.status])).toEqual([
      ['a', 'up'],
      ['b', 'up'],
    ]);
  });

  test('a failing probe makes the report down and carries its message', async () => {
    const report = await checkHealth({
      timeoutMs: 100,
      probes: [
        { name: 'a', source: 'embedded', probe: () => Promise.resolve('fine') },
        { name: 'b', source: 'external', probe: () => Promise.reject(new Error('connection refused')) },
      ],
    });
    expect(report.status).toBe('down');
    expect(report.dependencies[1]).toMatchObject({ name: 'b', status: 'down', error: 'connection refused' });
  });

  test('a probe that hangs counts as down after the timeout', async () => {
    const started = Date.now();
    const report = await checkHealth({
      timeoutMs: 50,
      probes: [{ name: 'slow', source: 'external', probe: () => new Promise(() => {}) }],
    });
    expect(Date.now() - started).toBeLessThan(1000);
    expect(report.dependencies[0]).toMatchObject({ status: 'down', error: 'no answer within 50 ms' });
  });
});
