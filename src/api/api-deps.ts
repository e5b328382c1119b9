import type { Logger } from 'pino';
import type { RateLimiter } from '../adapters/redis/rate-limiter.js';
import type { AccountStore, WalletProvisioner } from '../domain/accounts/accounts.service.js';
import type { ApiKeyStore } from '../domain/auth/api-keys.service.js';
import type { FollowStore } from '../domain/follows/follows.service.js';
import type { LedgerStore } from '../domain/ledger/ledger.service.js';
import type { HealthReport } from '../domain/health/health.service.js';
import type { Metrics } from './metrics.js';

/** What the transports need from the composition root (src/app). */
export interface ApiDeps {
  logger: Logger;
  metrics: Metrics;
  checkHealth(): Promise<HealthReport>;
  accounts: AccountStore;
  apiKeys: ApiKeyStore;
  follows: FollowStore;
  ledger: LedgerStore;
  wallets: WalletProvisioner;
  rateLimiter: RateLimiter;
}
