import { spawnModuleThread } from '../module-thread.js';
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
  const worker = spawnModuleThread(import.meta.url, 'localnet-worker', options);
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
