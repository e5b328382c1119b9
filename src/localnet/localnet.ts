import { LocalChain } from './chain.js';
import { attachPubSub, createDispatcher, createHttpServer, listenPair } from './rpc-server.js';

export interface LocalnetOptions {
  /** Folder for the chain's snapshots and history; undefined keeps it in memory. */
  dir?: string;
  host?: string;
  /** JSON-RPC port (WebSocket on the next one); 0 picks a free pair. */
  port: number;
  /** Slot length; 400 ms like a validator. */
  slotMs?: number;
  /** Slots behind the newest at which `confirmed` and `finalized` are (ChainOptions). */
  confirmationSlots?: number;
  finalizationSlots?: number;
  /**
   * Serve only the standard JSON-RPC methods, hiding `localnet_*`: the service then takes it for
   * a validator it does not control (compose's solana-test-validator) and bootstraps accordingly.
   */
  plainValidator?: boolean;
}

export interface Localnet {
  rpcUrl: string;
  wsUrl: string;
  chain: LocalChain;
  close(): Promise<void>;
}

/** The embedded chain behind JSON-RPC and PubSub, like `solana-test-validator`. */
export async function startLocalnet(options: LocalnetOptions): Promise<Localnet> {
  const host = options.host ?? '127.0.0.1';
  const chain = LocalChain.open({
    dir: options.dir,
    slotMs: options.slotMs ?? 400,
    confirmationSlots: options.confirmationSlots,
    finalizationSlots: options.finalizationSlots,
  });
  const server = createHttpServer(createDispatcher(chain, { plainValidator: options.plainValidator }));
  let port: number;
  let wss;
  try {
    ({ port, wss } = await listenPair(server, host, options.port));
  } catch (error) {
    await chain.close();
    const reason =
      (error as NodeJS.ErrnoException).code === 'EADDRINUSE'
        ? ` (port ${options.port} or ${options.port + 1} is in use: set LOCALNET_PORT)`
        : '';
    throw new Error(`The embedded localnet could not listen${reason}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  attachPubSub(wss, chain);
  return {
    rpcUrl: `http://${host}:${port}`,
    wsUrl: `ws://${host}:${port + 1}`,
    chain,
    close: async () => {
      for (const client of wss.clients) client.terminate();
      await new Promise((resolve) => wss.close(resolve));
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await chain.close();
    },
  };
}
