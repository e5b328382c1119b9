-- Domain events shipped from the Postgres outbox (post created, liked, reposted, followed, ledger
-- movements, ...). The shipper retries batches, so rows are keyed by event_id and a
-- ReplacingMergeTree collapses a batch that landed twice; queries that must count exactly use FINAL
-- or GROUP BY event_id.
-- Partitioned by month: analytics read recent days, and old months can be dropped or moved whole.
-- ORDER BY (type, occurred_at, event_id): every dashboard query filters by event type and a time range.
CREATE TABLE IF NOT EXISTS {db}.domain_events
(
    event_id     UUID,
    type         LowCardinality(String),
    occurred_at  DateTime64(3, 'UTC'),
    actor_id     Nullable(UUID),
    post_id      Nullable(UUID),
    -- micro-USD; 0 for events that move no money
    amount_micro Int64 DEFAULT 0,
    payload      String DEFAULT '{}',
    shipped_at   DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(shipped_at)
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (type, occurred_at, event_id);
