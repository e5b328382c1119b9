import type { ClickHouse } from '../../adapters/clickhouse/index.js';
import type { AccountStore } from '../../domain/accounts/accounts.service.js';
import { requireTimeRange } from '../../domain/analytics/time-range.js';
import { requireOwnerOrFinance } from '../../domain/auth/access-rules.js';
import type { Viewer } from '../../domain/auth/api-keys.service.js';
import { AppError } from '../../domain/errors.js';
import { creatorEarnings, type EarningsPoint } from './analytics-reads.js';

/** The widest earnings range one read may ask for. */
export const MAX_EARNINGS_RANGE_DAYS = 400;

/**
 * The creator analytics reads as a viewer asks for them: the account or post looked up,
 * the access rule (owner or finance) and the range bound applied, then the ClickHouse read. The
 * transports call these, never the reads directly.
 */
export async function earningsFor(
  deps: { accounts: Pick<AccountStore, 'byHandle'>; clickhouse: ClickHouse },
  viewer: Viewer,
  query: { handle: string; from: Date; to: Date; granularity: 'hour' | 'day' },
): Promise<EarningsPoint[]> {
  const creator = await deps.accounts.byHandle(query.handle);
  if (!creator) throw new AppError('not_found', `No user @${query.handle}`);
  requireOwnerOrFinance(viewer, creator.id, "Earnings are their creator's (or finance's) to read");
  requireTimeRange(query.from, query.to, MAX_EARNINGS_RANGE_DAYS);
  return creatorEarnings(deps.clickhouse, creator.id, query.from, query.to, query.granularity);
}
