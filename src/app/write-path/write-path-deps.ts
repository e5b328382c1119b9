import type { Db } from '../../adapters/postgres/db.js';
import type { Keystore, PlatformChain, RpcClient, SignatureWatcher } from '../../adapters/solana/index.js';
import type { ChangeSignals } from '../change-signals.js';

/** What every paid write, the payment wait and the settlement worker need of the process. */
export interface WritePathDeps {
  db: Db;
  rpc: RpcClient;
  keystore: Keystore;
  /** The process's one status poller for every transaction in flight. */
  watcher: SignatureWatcher;
  bootstrapChain(): Promise<PlatformChain>;
  /** The read caches of every process, told when a committed change alters what reads show. */
  changes: Pick<ChangeSignals, 'changed'>;
}
