import path from 'node:path';
import { startLocalnetThread } from '../localnet/localnet-thread.js';
import type { ServiceHandle } from './service-handle.js';

/** The chain: a cluster named by SOLANA_RPC_URL, or the embedded localnet. */
export interface SolanaHandle extends ServiceHandle {
  readonly wsUrl: string;
}

export interface SolanaOptions {
  rpcUrl: string | undefined;
  dataDir: string;
  /** LOCALNET_PORT; the WebSocket listens on the next port. */
  localnetPort: number;
  host?: string;
}

export async function startSolana(options: SolanaOptions): Promise<SolanaHandle> {
  if (options.rpcUrl) {
    return {
      url: options.rpcUrl,
      // Shown only: the service confirms by polling and opens no WebSocket (SOLANA_WS_URL is gone).
      wsUrl: websocketUrlOf(options.rpcUrl),
      source: 'external',
      stop: async () => {},
    };
  }
  // Its own thread: the chain's CPU work runs beside the service, on the second core.
  const localnet = await startLocalnetThread({
    dir: path.join(options.dataDir, 'localnet'),
    port: options.localnetPort,
  });
  return { url: localnet.rpcUrl, wsUrl: localnet.wsUrl, source: 'embedded', stop: () => localnet.close() };
}

/** web3.js's rule: same host, port + 1, ws(s) scheme. */
export function websocketUrlOf(rpcUrl: string): string {
  const url = new URL(rpcUrl);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  if (url.port) url.port = String(Number(url.port) + 1);
  return url.toString().replace(/\/$/, '');
}
