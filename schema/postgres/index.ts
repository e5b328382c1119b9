import type { Migration } from 'kysely';
import * as accounts from './2026_11_22_0_accounts.js';
import * as platformWallets from './2026_11_22_1_platform_wallets.js';
import * as apiKeysFollows from './2026_11_22_2_api_keys_follows.js';
import * as ledger from './2026_11_22_3_ledger.js';
import * as postsOutbox from './2026_11_22_4_posts_outbox.js';
import * as repostsLikes from './2026_11_22_5_reposts_likes.js';
import * as sends from './2026_11_22_6_sends.js';
import * as idempotencyKeys from './2026_11_22_7_idempotency_keys.js';
import * as heldCredits from './2026_11_22_8_held_credits.js';
import * as indexer from './2026_11_22_9_indexer.js';
import * as readPath from './2026_11_22_a_read_path.js';
import * as nativeLedger from './2026_11_22_b_native_ledger.js';
import * as creatorFund from './2026_11_22_c_creator_fund.js';
import * as swaps from './2026_11_22_d_swaps.js';
import * as recordMovementFunction from './2026_11_22_e_record_movement_function.js';
import * as releasedHandles from './2026_11_24_e_released_handles.js';
import * as storedCounters from './2026_11_24_f_stored_counters.js';
import * as idempotencyLeases from './2026_11_24_g_idempotency_leases.js';
import * as setLikeFunction from './2026_11_25_a_set_like_function.js';
import * as paymentFinality from './2026_11_27_a_payment_finality.js';
import * as eventLog from './2026_11_27_b_event_log.js';
import * as accountEventSources from './2026_11_27_c_account_event_sources.js';
import * as sealedWebhookSecrets from './2026_11_29_b_sealed_webhook_secrets.js';
import * as depositFinality from './2026_11_29_c_deposit_finality.js';
import * as webhookFairness from './2026_11_29_a_webhook_fairness.js';
import * as reportRuns from './2026_11_29_d_report_runs.js';
import * as financePeriods from './2026_11_29_e_finance_periods.js';
import * as blockFollower from './2026_11_29_f_block_follower.js';

/**
 * Every Postgres migration, by name. Imported statically (not read from the folder at run time)
 * so the same list works under tsx, vitest and the compiled build. Append-only: a landed
 * migration is never edited; test/migrations.test.ts checks every file here is listed.
 */
export const postgresMigrations: Record<string, Migration> = {
  '2026_11_22_0_accounts': accounts,
  '2026_11_22_1_platform_wallets': platformWallets,
  '2026_11_22_2_api_keys_follows': apiKeysFollows,
  '2026_11_22_3_ledger': ledger,
  '2026_11_22_4_posts_outbox': postsOutbox,
  '2026_11_22_5_reposts_likes': repostsLikes,
  '2026_11_22_6_sends': sends,
  '2026_11_22_7_idempotency_keys': idempotencyKeys,
  '2026_11_22_8_held_credits': heldCredits,
  '2026_11_22_9_indexer': indexer,
  // Kysely runs migrations in the text order of their names: after _9_ comes _a_, not _10_.
  '2026_11_22_a_read_path': readPath,
  '2026_11_22_b_native_ledger': nativeLedger,
  '2026_11_22_c_creator_fund': creatorFund,
  '2026_11_22_d_swaps': swaps,
  '2026_11_22_e_record_movement_function': recordMovementFunction,
  '2026_11_24_e_released_handles': releasedHandles,
  '2026_11_24_f_stored_counters': storedCounters,
  '2026_11_24_g_idempotency_leases': idempotencyLeases,
  '2026_11_25_a_set_like_function': setLikeFunction,
  '2026_11_27_a_payment_finality': paymentFinality,
  '2026_11_27_b_event_log': eventLog,
  '2026_11_27_c_account_event_sources': accountEventSources,
  '2026_11_29_b_sealed_webhook_secrets': sealedWebhookSecrets,
  '2026_11_29_c_deposit_finality': depositFinality,
  '2026_11_29_a_webhook_fairness': webhookFairness,
  '2026_11_29_d_report_runs': reportRuns,
  '2026_11_29_e_finance_periods': financePeriods,
  '2026_11_29_f_block_follower': blockFollower,
};
