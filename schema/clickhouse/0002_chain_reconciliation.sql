-- Chain side of reconciliation, written by the indexer. Money is Int64 micro-USD (USDC base
-- units; native-token amounts are base units too), time DateTime64(3, 'UTC'). Every table is a
-- ReplacingMergeTree keyed by what makes a row unique, because the indexer re-checks (confirmed,
-- then finalized; `reconcile --since`; `reindex`) and must never double-count: readers use FINAL
-- or argMax.

-- One row per landed transaction the indexer fetched. Queries: by signature (drill-down) and by
-- day (finance totals). Partition by month; ORDER BY signature for the point lookup.
CREATE TABLE IF NOT EXISTS {db}.chain_transactions
(
    signature   String,
    slot        UInt64,
    block_time  DateTime64(3, 'UTC'),
    fee         UInt64,
    status      LowCardinality(String),           -- 'success' | 'failed'
    error       String DEFAULT '',                -- the on-chain error as JSON, '' on success
    indexed_at  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(indexed_at)
PARTITION BY toYYYYMM(block_time)
ORDER BY signature;

-- Token movements derived from pre/post token balances: one row per (signature, token account).
-- `amount` is signed: negative leaves the account. Queries: a transaction's movements (drill-down)
-- and a wallet's movements over time, so ORDER BY (signature, token_account).
CREATE TABLE IF NOT EXISTS {db}.token_movements
(
    signature       String,
    account_index   UInt16,
    mint            LowCardinality(String),
    owner           String,
    token_account   String,
    amount          Int64,
    block_time      DateTime64(3, 'UTC'),
    indexed_at      DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(indexed_at)
PARTITION BY toYYYYMM(block_time)
ORDER BY (signature, token_account);

-- The latest verdict per ledger movement (or per unexplained signature: movement_id is then the
-- nil UUID and `signature` tells them apart). checked_at is the version: the latest check wins.
-- Queries: one day's summary (by ledger day) and the exception list by status, so
-- ORDER BY (ledger_day, movement_id, signature); partition by month of the ledger day.
CREATE TABLE IF NOT EXISTS {db}.reconciliation
(
    movement_id     UUID,
    signature       String,
    ledger_day      Date,
    status          LowCardinality(String),
    ledger_amount   Int64,                        -- micro-USD the ledger moved (sum of credits)
    chain_amount    Int64,                        -- micro-USD the chain moved (sum of credits)
    commitment      LowCardinality(String),       -- 'confirmed' | 'finalized' | ''
    detail          String DEFAULT '',
    checked_at      DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(checked_at)
PARTITION BY toYYYYMM(ledger_day)
ORDER BY (ledger_day, movement_id, signature);

-- Ledger legs shipped from Postgres (with the domain events): the analytics copy of the money.
-- Keyed by the leg's id, so a batch shipped twice collapses.
CREATE TABLE IF NOT EXISTS {db}.ledger_legs
(
    leg_id          UInt64,
    movement_id     UUID,
    movement_kind   LowCardinality(String),
    account_kind    LowCardinality(String),
    account_id      Nullable(UUID),
    amount          Int64,
    counts          LowCardinality(String),
    created_at      DateTime64(3, 'UTC'),
    shipped_at      DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(shipped_at)
PARTITION BY toYYYYMM(created_at)
ORDER BY leg_id;

-- Earnings per creator: every 'earned' leg, re-keyed by creator and time so one creator's range
-- is a contiguous read. Not pre-summed: a re-shipped leg must collapse (ReplacingMergeTree on
-- leg_id), which a SummingMergeTree could not do; creatorEarnings sums it with FINAL, grouped by
-- hour or day.
CREATE TABLE IF NOT EXISTS {db}.creator_earnings
(
    creator_id      UUID,
    created_at      DateTime64(3, 'UTC'),
    leg_id          UInt64,
    movement_kind   LowCardinality(String),
    amount          Int64
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(created_at)
ORDER BY (creator_id, created_at, leg_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.creator_earnings_mv TO {db}.creator_earnings AS
SELECT assumeNotNull(account_id) AS creator_id, created_at, leg_id, movement_kind, amount
FROM {db}.ledger_legs
WHERE counts = 'earned' AND account_kind = 'user' AND account_id IS NOT NULL;

-- Engagement per post: every engagement event re-keyed by post and time (postStats, trending and
-- the creator fund read one post's or one epoch's rows). Same collapse-by-id rule as above.
CREATE TABLE IF NOT EXISTS {db}.post_engagement
(
    post_id         UUID,
    occurred_at     DateTime64(3, 'UTC'),
    event_id        UUID,
    type            LowCardinality(String),
    actor_id        Nullable(UUID),
    delta           Int8
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (post_id, occurred_at, event_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.post_engagement_mv TO {db}.post_engagement AS
SELECT
    assumeNotNull(if(type IN ('post.replied', 'post.quoted'),
                     toUUIDOrNull(JSONExtractString(payload, 'target_post_id')), post_id)) AS post_id,
    occurred_at, event_id, type, actor_id,
    toInt8(if(type = 'post.unliked', -1, 1)) AS delta
FROM {db}.domain_events
WHERE type IN ('post.liked', 'post.unliked', 'post.replied', 'post.quoted', 'post.reposted')
  AND (type NOT IN ('post.replied', 'post.quoted') OR toUUIDOrNull(JSONExtractString(payload, 'target_post_id')) IS NOT NULL)
  AND post_id IS NOT NULL;
