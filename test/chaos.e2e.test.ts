import { spawn } from 'node:child_process';
import { describe, expect, test } from 'vitest';

/**
 * `npm run chaos -- --short` as part of `npm test`: the service on its own redis-server, Postgres
 * and localnet under careful clients while Redis, Postgres, the RPC, ClickHouse, the whole
 * service, and the service with its chain fail one after another (6 s each); then the books must close. The bench prints one row
 * per fault and one per end-of-run check and exits 1 when any fails; this test holds that it ran
 * every fault and every check, and passed.
 */
const FAULTS = [
  'a) redis kill -9',
  'b) postgres kill -9',
  'c) localnet RPC stopped',
  'd) clickhouse unavailable',
  'e) service kill -9 (group)',
  'f) service and localnet kill -9 together',
];

function runChaos(): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/chaos.ts', '--short'], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => resolve({ code, output }));
  });
}

describe('npm run chaos -- --short', () => {
  test(
    'every fault answers JSON 503s or successes and recovers; the books close',
    { timeout: 900_000 },
    async () => {
      const { code, output } = await runChaos();
      const rows = output.split('\n').filter((line) => line.startsWith('| '));
      for (const fault of FAULTS) {
        const row = rows.find((line) => line.startsWith(`| ${fault} `));
        expect(row, `${fault}:\n${output.slice(-8_000)}`).toMatch(/\| PASS +\|$/);
      }
      // The end-of-run checks: one row each after their header (the header and rule rows aside).
      const checks = (output.split('End-of-run checks')[1] ?? '')
        .split('\n')
        .filter((line) => line.startsWith('| ') && !line.startsWith('| check '));
      expect(checks.length, output.slice(-8_000)).toBe(9);
      expect(
        checks.filter((line) => !/^\| [^|]+\| PASS +\|/.test(line)),
        output.slice(-8_000),
      ).toEqual([]);
      expect(output).toMatch(/^chaos: PASS$/m);
      expect(code, output.slice(-8_000)).toBe(0);
    },
  );
});
