import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { workerData } from 'node:worker_threads';
import type { QueueThreadData } from '../../workers/queue-thread.js';
import { parentLogger, serveUntilClosed } from '../../workers/thread-host.js';

/*
 * A queue thread for test/queue-thread.test.ts: its first start says it is ready, logs, and dies
 * (as a thread whose code throws would); later starts serve until asked to close. Each start and
 * each close leaves a file in DATA_DIR, for the test to count.
 */
const { config } = workerData as QueueThreadData;
const log = parentLogger(config);
mkdirSync(config.dataDir, { recursive: true });
const crashed = path.join(config.dataDir, 'crashed');
const firstStart = !existsSync(crashed);
writeFileSync(path.join(config.dataDir, `started-${Date.now()}-${Math.random()}`), '');
serveUntilClosed(log, async () => {
  await writeFile(path.join(config.dataDir, 'closed'), '');
});
log.warn({ firstStart }, 'crash-once thread started');
if (firstStart) {
  writeFileSync(crashed, '');
  setTimeout(() => {
    throw new Error('crash-once thread: the first start dies');
  }, 50);
}
