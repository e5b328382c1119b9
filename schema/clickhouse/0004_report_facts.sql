-- What the report runs (issue 50: ledger.itemized, account.statement, balance.summary) print of each
-- leg, computed in Postgres when the leg is shipped (src/adapters/postgres/event-shipping.repository.ts):
--   history_type     the type the account's history gives the leg (transactionTypeOf: movement kind
--                    and the leg's sign; a reversal is 'refund')
--   swap_tx          the movement's chain signature (a reversal: the reversed movement's; a deposit:
--                    the transfer that brought it), '' when it has none
--   related_post_id  the post the movement paid for (a repost: the reposted post)
--   counterparty_id  the other party of a send, from the leg's account's side (a handle is looked up
--                    when a report is written: handles can change)
-- Legs shipped before this file get them from `cli reindex` (it rewinds the shipper; the newer
-- shipped_at wins in the ReplacingMergeTree); until then they read as the defaults.
ALTER TABLE {db}.ledger_legs ADD COLUMN IF NOT EXISTS history_type LowCardinality(String) DEFAULT '';
ALTER TABLE {db}.ledger_legs ADD COLUMN IF NOT EXISTS swap_tx String DEFAULT '';
ALTER TABLE {db}.ledger_legs ADD COLUMN IF NOT EXISTS related_post_id Nullable(UUID);
ALTER TABLE {db}.ledger_legs ADD COLUMN IF NOT EXISTS counterparty_id Nullable(UUID);

-- Accounts as reports print them: the handle now and the custodial wallet. Copied from Postgres
-- before a run that needs them (src/app/reports/report-writers/report-accounts.ts), one row per
-- account; the latest copy wins.
CREATE TABLE IF NOT EXISTS {db}.report_accounts
(
    account_id      UUID,
    handle          String,
    wallet_address  String DEFAULT '',
    synced_at       DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(synced_at)
ORDER BY account_id;
