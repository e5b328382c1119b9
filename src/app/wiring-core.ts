import { createHmac } from 'node:crypto';
import type { Logger } from 'pino';
import { createAccountStore } from '../adapters/postgres/accounts.repository.js';
import { createApiKeyStore } from '../adapters/postgres/api-keys.repository.js';
import type { Db } from '../adapters/postgres/db.js';
import { createFollowStore } from '../adapters/postgres/follows.repository.js';
import { createKeyUseNotes, type KeyUseNotes } from '../adapters/postgres/key-use-notes.js';
import { createLedgerStore } from '../adapters/postgres/ledger.repository.js';
import { platformWalletStore } from '../adapters/postgres/platform-wallets.repository.js';
import {
  bootstrapChain,
  createKeystore,
  createRpcClient,
  createSignatureWatcher,
  createWalletProvisioner,
  loadOrCreateDevMasterKey,
  parseMasterKey,
  rpcPacingFor,
  type Keystore,
  type PlatformChain,
  type RpcClient,
  type SignatureWatcher,
} from '../adapters/solana/index.js';
import type { Config } from '../config/index.js';
import type { AccountStore, WalletProvisioner } from '../domain/accounts/accounts.service.js';
import type { ApiKeyStore } from '../domain/auth/api-keys.service.js';
import type { FollowStore } from '../domain/follows/follows.service.js';
import type { LedgerStore } from '../domain/ledger/ledger-store.port.js';

/*
 * The wiring's core section (steps 2-4 of src/app/wiring.ts, read that first): the master key, the
 * chain's clients and the stores over one Postgres pool. A file of its own only because the
 * payments threads (workers/payments.thread.ts) load it: wiring.ts imports the ClickHouse adapter,
 * and loading chdb's native engine in a worker thread beside the one the main thread holds aborts
 * it ("The server is shutting down due to a fatal error"). So nothing here may import ClickHouse,
 * even through another module (test/layering.test.ts follows the threads' imports to check).
 */

/** How long keys' last-use notes gather before one statement writes them all. */
const KEY_USE_WRITE_DELAY_MS = 1_000;

// 2. The master key.

/**
 * WALLET_MASTER_KEY when set; in production it must be. Elsewhere a development key is generated
 * into DATA_DIR (with a loud warning), so `npm start` needs no setup.
 */
export function resolveMasterKey(config: Config, logger: Logger): Buffer {
  if (config.WALLET_MASTER_KEY) return parseMasterKey(config.WALLET_MASTER_KEY);
  if (config.NODE_ENV === 'production') {
    throw new Error('WALLET_MASTER_KEY is required in production: 64 hex characters (32 random bytes).');
  }
  return loadOrCreateDevMasterKey(config.dataDir, (message) => logger.warn(message));
}

// 3-4. The chain's clients and the stores: what every entry point shares.

/** The stores and chain services every entry point shares: the API process and the CLI alike. */
export interface CoreServices {
  rpc: RpcClient;
  /** One status poller for every transaction this process waits on (close it on shutdown). */
  watcher: SignatureWatcher;
  keystore: Keystore;
  /** HMAC key of opaque pagination cursors (per deployment: forged cursors are refused). */
  cursorSecret: string;
  /** HMAC key of report files' download links (src/domain/reports/report-file-link.ts). */
  reportLinkKey: Buffer;
  accounts: AccountStore;
  apiKeys: ApiKeyStore;
  /** The keys' last-use notes, written in the background (close it on shutdown: it writes the rest). */
  apiKeyUses: KeyUseNotes;
  follows: FollowStore;
  ledger: LedgerStore;
  wallets: WalletProvisioner;
  /**
   * Creates or checks the platform's mints, wallets and token accounts (idempotent); memoized:
   * the first call bootstraps, later calls share its result.
   */
  bootstrapChain(): Promise<PlatformChain>;
}

/**
 * The core of a process that holds a Postgres pool (`db`) and reaches the chain at `solanaUrl`.
 * `masterKey` is resolved here unless the caller already did (openApp resolves it first of all).
 */
export function createCoreServices(
  config: Config,
  logger: Logger,
  db: Db,
  solanaUrl: string,
  masterKey: Buffer = resolveMasterKey(config, logger),
): CoreServices {
  const rpc = createRpcClient(solanaUrl);
  const watcher = createSignatureWatcher(rpc);
  const keystore = createKeystore(masterKey);
  let bootstrapped: Promise<PlatformChain> | undefined;
  const platform = (): Promise<PlatformChain> => {
    bootstrapped ??= bootstrapChain(
      {
        rpc,
        wallets: platformWalletStore(db),
        keystore,
        log: (message) => logger.info(`bootstrap: ${message}`),
      },
      { usdcMint: config.USDC_MINT, nativeMint: config.NATIVE_MINT, priorityFee: config.SOLANA_PRIORITY_FEE },
    )
      .then((chain) => {
        // The cluster is known now: pace the RPC as it allows (a public RPC rate-limits).
        const pacing = rpcPacingFor(chain.cluster, {
          pollMs: config.SOLANA_POLL_MS,
          maxRequestsPerSecond: config.SOLANA_MAX_RPS,
        });
        watcher.tune(pacing);
        rpc.limitRate(pacing.maxRequestsPerSecond);
        return chain;
      })
      .catch((error: unknown) => {
        bootstrapped = undefined; // a failed bootstrap (chain down) is retried on the next call
        throw error;
      });
    return bootstrapped;
  };
  const apiKeyUses = createKeyUseNotes(db, {
    delayMs: KEY_USE_WRITE_DELAY_MS,
    onError: (err, keys) =>
      logger.warn({ err, keys }, `could not write ${keys} API key last-use time(s); trying again`),
  });
  return {
    rpc,
    watcher,
    keystore,
    // A key of its own for cursor MACs, derived so the master key itself never signs anything public.
    cursorSecret: createHmac('sha256', masterKey).update('ledgerfeed:history-cursor:v1').digest('hex'),
    // Another derived key, so a download link and a cursor can never be made to verify as each other.
    reportLinkKey: createHmac('sha256', masterKey).update('ledgerfeed:report-file-link:v1').digest(),
    accounts: createAccountStore(db),
    apiKeys: createApiKeyStore(db, apiKeyUses),
    apiKeyUses,
    follows: createFollowStore(db),
    ledger: createLedgerStore(db),
    wallets: createWalletProvisioner({ keystore }),
    bootstrapChain: platform,
  };
}
