import { parentPort, workerData } from 'node:worker_threads';
import { nameThisThread } from '../module-thread.js';
import { startLocalnet, type LocalnetOptions } from './localnet.js';

nameThisThread('lf-localnet');

/**
 * Entry point of a localnet running in its own thread (see localnet-thread.ts): the chain and its
 * RPC server get a core of their own instead of sharing the event loop with the API and workers.
 */
const localnet = await startLocalnet(workerData as LocalnetOptions);
parentPort?.postMessage({
  type: 'ready',
  rpcUrl: localnet.rpcUrl,
  wsUrl: localnet.wsUrl,
  genesisHash: localnet.chain.genesisHash,
});
parentPort?.on('message', (message: { type: string }) => {
  if (message.type !== 'close') return;
  void localnet.close().then(() => parentPort?.postMessage({ type: 'closed' }));
});
