import { spawnSync } from 'node:child_process';
import { expect, test } from 'vitest';

/*
 * A worker thread caught where termination does not reach it (here: waiting in a synchronous
 * child process, blocked in native code) holds process.exit(), which joins every worker; the
 * forced exit ends the process at once anyway, with the log's last line written.
 */
const script = (exit: 'exitAtOnce' | 'process.exit') => `
  import { Worker } from 'node:worker_threads';
  import { exitAtOnce } from ${JSON.stringify(new URL('./exit-at-once.ts', import.meta.url).pathname)};
  new Worker("process.getBuiltinModule('node:child_process').execSync('sleep 6')", { eval: true });
  setTimeout(() => {
    process.stdout.write('last line\\n');
    ${exit === 'exitAtOnce' ? 'exitAtOnce({ flush: () => {} });' : 'process.exit(1);'}
  }, 500);
`;

const run = (exit: 'exitAtOnce' | 'process.exit') =>
  spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script(exit)], {
    encoding: 'utf8',
    timeout: 3_000,
  });

test('a forced exit ends the process at once where process.exit() waits on a stuck worker thread', () => {
  const held = run('process.exit');
  expect(held.error).toMatchObject({ code: 'ETIMEDOUT' });

  const forced = run('exitAtOnce');
  expect(forced.error).toBeUndefined();
  expect(forced.signal).toBe('SIGKILL');
  expect(forced.stdout).toBe('last line\n');
});
