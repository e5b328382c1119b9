import type { App } from '../src/app/app.js';
import type { RunningRole } from './role.js';

/**
 * The indexer role: reconciles every swap_tx against the chain and follows platform wallets.
 * Reconciliation arrives with the indexer issue (#6); until then the role holds its place in the
 * process model and names the chain it will follow.
 */
export function startIndexerRole(app: App): RunningRole {
  return {
    name: 'indexer',
    summary: [`chain ${app.stack.solana.url}; reconciliation not built yet (issue #6)`],
    stop: async () => {},
  };
}
