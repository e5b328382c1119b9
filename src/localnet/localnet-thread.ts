import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { LocalnetOptions } from './localnet.js';

export interface LocalnetThread {
  rpcUrl: string;
  wsUrl: string;
  genesisHash: string;
  /** Saves the chain and stops the thread. */
  close(): Promise<void>;
}

/**
 * Starts the localnet in a worker thread, as `npm start` runs it: clients reach it only over
 * JSON-RPC and WebSocket, exactly as they would a validator, and its CPU work (litesvm execution,
 * balance snapshots, JSON) runs beside the service's event loop instead of inside it.
 */
export async function startLocalnetThread(options: LocalnetOptions): Promise<LocalnetThread> {
  const worker = spawnWorker(options);
  const ready = await new Promise<{ rpcUrl: string; wsUrl: string; genesisHash: string }>(
    (resolve, reject) => {
      worker.once('error', reject);
      worker.once('exit', (code) =>
        reject(new Error(`the localnet thread exited with code ${code} before it was ready`)),
      );
      worker.once('message', resolve);
    },
  );
  worker.removeAllListeners('exit');
  worker.removeAllListeners('error');
  worker.on('error', (error) => console.error('localnet thread failed:', error));
  return {
    ...ready,
    close: async () => {
      const closed = new Promise<void>((resolve) => {
        worker.on('message', (message: { type: string }) => {
          if (message.type === 'closed') resolve();
        });
        worker.once('exit', () => resolve());
      });
      worker.postMessage({ type: 'close' });
      await closed;
      await worker.terminate();
    },
  };
}

/**
 * After a build the worker is plain JS. Under tsx (npm start) the worker's module is TypeScript and
 * workers do not inherit tsx's loader, so a two-line bootstrap registers it there first.
 */
function spawnWorker(options: LocalnetOptions): Worker {
  if (!import.meta.url.endsWith('.ts')) {
    return new Worker(new URL('./localnet-worker.js', import.meta.url), { workerData: options });
  }
  const tsx = tsxEsmApi();
  const entry = new URL('./localnet-worker.ts', import.meta.url).href;
  const bootstrap =
    `import(${JSON.stringify(tsx)}).then((api) => { (api.register ?? api.default.register)(); ` +
    `return import(${JSON.stringify(entry)}); });`;
  return new Worker(bootstrap, { eval: true, workerData: options });
}

/**
 * The ESM entry of `tsx/esm/api`, from tsx's own exports map. Not import.meta.resolve (vitest's
 * module runner lacks it) and not require.resolve (that picks the CommonJS build, whose loader
 * registration breaks inside a worker).
 */
function tsxEsmApi(): string {
  const require = createRequire(import.meta.url);
  const manifestPath = require.resolve('tsx/package.json');
  const manifest = require(manifestPath) as { exports: Record<string, { import: { default: string } }> };
  const entry = manifest.exports['./esm/api']?.import.default;
  if (!entry) throw new Error('tsx/esm/api has no ESM entry');
  return pathToFileURL(path.join(path.dirname(manifestPath), entry)).href;
}
