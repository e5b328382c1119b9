import { describe, expect, test } from 'vitest';
import { checkHealth, publicHealthReport, reportDraining, type HealthReport } from './health.service.js';

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

  test('a dependency without a probe is not_configured and does not make the report down', async () => {
    const report = await checkHealth({
      timeoutMs: 100,
      probes: [
        { name: 'a', source: 'embedded', probe: () => Promise.resolve('fine') },
        { name: 'clickhouse', source: 'none', probe: undefined },
      ],
    });
    expect(report.status).toBe('ok');
    expect(report.dependencies.map((d) => [d.name, d.status])).toEqual([
      ['a', 'up'],
      ['clickhouse', 'not_configured'],
    ]);
    const down = await checkHealth({
      timeoutMs: 100,
      probes: [
        { name: 'a', source: 'embedded', probe: () => Promise.reject(new Error('no')) },
        { name: 'clickhouse', source: 'none', probe: undefined },
      ],
    });
    expect(down.status).toBe('down');
  });

  test('a failing probe makes the report down; its message is the detail, not the public error', async () => {
    const report = await checkHealth({
      timeoutMs: 100,
      probes: [
        { name: 'a', source: 'embedded', probe: () => Promise.resolve('fine') },
        {
          name: 'b',
          source: 'external',
          probe: () => Promise.reject(new Error('connect ECONNREFUSED 10.1.2.3:5432')),
        },
      ],
    });
    expect(report.status).toBe('down');
    expect(report.dependencies[1]).toMatchObject({
      name: 'b',
      status: 'down',
      error: 'probe failed',
      detail: 'connect ECONNREFUSED 10.1.2.3:5432',
    });
    const shown = publicHealthReport(report);
    expect(shown.dependencies[1]).toMatchObject({ name: 'b', status: 'down', error: 'probe failed' });
    expect(JSON.stringify(shown)).not.toContain('10.1.2.3');
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

describe('reportDraining', () => {
  const ok: HealthReport = {
    status: 'ok',
    checkedAt: new Date(0),
    dependencies: [{ name: 'postgres', status: 'up', latencyMs: 1, source: 'embedded' }],
  };

  test('passes the report through until the process drains, then says draining over any status', async () => {
    let draining = false;
    let report = ok;
    const check = reportDraining(
      () => Promise.resolve(report),
      () => draining,
    );
    expect(await check()).toEqual(ok);
    draining = true;
    expect(await check()).toEqual({ ...ok, status: 'draining' });
    report = { ...ok, status: 'down' };
    expect((await check()).status).toBe('draining');
  });
});
