import type { Logger } from 'pino';
import { loadOrCreateDevMasterKey, parseMasterKey } from '../adapters/solana/index.js';
import type { Config } from '../config/index.js';

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
