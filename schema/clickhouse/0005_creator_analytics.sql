-- Creator analytics (issue 51): earnings by source, by post and by payer; every post of an author;
-- what the audience reads need.
--
-- 1. What each leg's paid engagement was, computed in Postgres when the leg is shipped
--    (src/adapters/postgres/event-shipping.repository.ts), for every leg of a reply, quote or repost
--    movement and of its reversal (a reversal's legs carry the reversed movement's engagement):
--      engagement       'reply' | 'quote' | 'repost'; '' for any other movement (a plain post, a send,
--                       a deposit, a swap, a fund payout, ...)
--      engaged_post_id  the post engaged with: the parent of a reply, the quoted post, the reposted
--                       post. Not related_post_id (0004): a reply's or quote's related_post_id is the
--                       NEW post the payment created.
--      payer_id         the account that paid for the engagement (the reply's, quote's or repost's
--                       author)
--    Legs shipped before this file get them from `cli reindex` (it rewinds the shipper; the newer
--    shipped_at wins in ledger_legs, and the view below re-inserts each earned leg into
--    creator_earnings, whose ReplacingMergeTree without a version keeps the last inserted row);
--    until then they read as the defaults ('' / NULL).
ALTER TABLE {db}.ledger_legs ADD COLUMN IF NOT EXISTS engagement LowCardinality(String) DEFAULT '';
ALTER TABLE {db}.ledger_legs ADD COLUMN IF NOT EXISTS engaged_post_id Nullable(UUID);
ALTER TABLE {db}.ledger_legs ADD COLUMN IF NOT EXISTS payer_id Nullable(UUID);

-- 2. creator_earnings carries them, named for the creator's side:
--      source   the paid engagement that earned ('reply' | 'quote' | 'repost'; '' for anything else,
--               and for a leg shipped before this file until `cli reindex`)
--      post_id  the CREATOR'S post that was engaged with (engaged_post_id)
--      payer_id the account that paid for that engagement
ALTER TABLE {db}.creator_earnings ADD COLUMN IF NOT EXISTS source LowCardinality(String) DEFAULT '';
ALTER TABLE {db}.creator_earnings ADD COLUMN IF NOT EXISTS post_id Nullable(UUID);
ALTER TABLE {db}.creator_earnings ADD COLUMN IF NOT EXISTS payer_id Nullable(UUID);

-- A materialized view's query cannot be altered in place: dropped and created again (as in 0003). A
-- run cut off between the two re-applies the whole file (it is recorded only at its end); a leg
-- shipped by another process between the two misses the view: `cli reindex` ships it again.
DROP VIEW IF EXISTS {db}.creator_earnings_mv;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.creator_earnings_mv TO {db}.creator_earnings AS
SELECT assumeNotNull(account_id) AS creator_id, created_at, leg_id, movement_kind, amount,
       engagement AS source, engaged_post_id AS post_id, payer_id
FROM {db}.ledger_legs
WHERE counts = 'earned' AND account_kind = 'user' AND account_id IS NOT NULL AND currency = 'usdc';

-- 3. Every post of every author (kind 'post' | 'reply' | 'quote' | 'repost'), keyed by author and
-- time so "every post of the creator" over a range is one contiguous read without Postgres.
-- Fed from the shipped domain events, which every paid write commits in the same Postgres
-- transaction as its row (src/adapters/postgres/outbox-writer.ts), so no post is missing and none
-- needs a second shipper:
--   post.created / post.replied / post.quoted: author = actor_id, post = post_id (the new post);
--                                             created_at = occurred_at, which is the post's
--                                             created_at (both now() of the same transaction)
--   post.reposted: author = actor_id (the reposter), post = payload.repost_id (the repost's own
--                  id; its post_id column is the reposted post)
-- A post whose payment later failed stays here, as its row stays in Postgres; a repost whose
-- payment failed is deleted in Postgres when it is retried (a new repost id), but its first row
-- stays here: readers that must match Postgres exactly join what they need (earnings come from
-- creator_earnings, which a reversal nets to zero).
-- Re-shipped events insert the same key again and collapse (ReplacingMergeTree; read with FINAL).
CREATE TABLE IF NOT EXISTS {db}.creator_posts
(
    author_id   UUID,
    post_id     UUID,
    created_at  DateTime64(3, 'UTC'),
    kind        LowCardinality(String)
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(created_at)
ORDER BY (author_id, created_at, post_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.creator_posts_mv TO {db}.creator_posts AS
SELECT assumeNotNull(actor_id) AS author_id,
       assumeNotNull(if(type = 'post.reposted', toUUIDOrNull(JSONExtractString(payload, 'repost_id')), post_id)) AS post_id,
       occurred_at AS created_at,
       multiIf(type = 'post.created', 'post', type = 'post.replied', 'reply', type = 'post.quoted', 'quote', 'repost') AS kind
FROM {db}.domain_events
WHERE type IN ('post.created', 'post.replied', 'post.quoted', 'post.reposted')
  AND actor_id IS NOT NULL
  AND if(type = 'post.reposted', toUUIDOrNull(JSONExtractString(payload, 'repost_id')), post_id) IS NOT NULL;

-- The events shipped before this file: copied once from domain_events (after the view exists, so an
-- event shipped meanwhile is in both and collapses). Re-running the statement repeats rows that
-- collapse the same way.
INSERT INTO {db}.creator_posts (author_id, post_id, created_at, kind)
SELECT assumeNotNull(actor_id),
       assumeNotNull(if(type = 'post.reposted', toUUIDOrNull(JSONExtractString(payload, 'repost_id')), post_id)),
       occurred_at,
       multiIf(type = 'post.created', 'post', type = 'post.replied', 'reply', type = 'post.quoted', 'quote', 'repost')
FROM {db}.domain_events FINAL
WHERE type IN ('post.created', 'post.replied', 'post.quoted', 'post.reposted')
  AND actor_id IS NOT NULL
  AND if(type = 'post.reposted', toUUIDOrNull(JSONExtractString(payload, 'repost_id')), post_id) IS NOT NULL;

-- 4. The audience (who engaged, who paid, who followed), from what is already here:
--   engagers        post_engagement.actor_id (likes, replies, quotes, reposts; one row per event,
--                   post_id = the post engaged with) joined to creator_posts for the author
--   paying engagers creator_earnings.payer_id (above), with what each paid into the creator's share
--   followers       'follow.created' is NOT a domain event: it goes to the per-account event log
--                   (event_staging, src/adapters/postgres/follows.repository.ts), which is not
--                   shipped, so ClickHouse has no follows. Read Postgres `follows` (follower_id,
--                   followee_id, created_at; an unfollow deletes the row), or ship follows as a
--                   domain event first.
