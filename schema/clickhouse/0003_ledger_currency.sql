-- The ledger holds two currencies since the native token (Postgres migration
-- 2026_11_22_b_native_ledger): a shipped leg says which (its ledger account's currency), and the
-- creator earnings view keeps USDC only, so native-token payouts are never summed as dollars.
-- Legs shipped before this migration were all USDC: the column's default says so.
ALTER TABLE {db}.ledger_legs ADD COLUMN IF NOT EXISTS currency LowCardinality(String) DEFAULT 'usdc';

-- A materialized view's query cannot be altered in place: dropped and created again. A run cut off
-- between the two re-applies the whole file (it is recorded only at its end).
DROP VIEW IF EXISTS {db}.creator_earnings_mv;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.creator_earnings_mv TO {db}.creator_earnings AS
SELECT assumeNotNull(account_id) AS creator_id, created_at, leg_id, movement_kind, amount
FROM {db}.ledger_legs
WHERE counts = 'earned' AND account_kind = 'user' AND account_id IS NOT NULL AND currency = 'usdc';
