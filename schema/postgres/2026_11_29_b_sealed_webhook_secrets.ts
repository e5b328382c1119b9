import { sql, type Kysely } from 'kysely';

/**
 * Webhook signing secrets sealed at rest (issue 49): `secret` and `previous_secret` hold
 * `whseal1.<iv>.<tag>.<ciphertext>` (AES-256-GCM under a key derived from the master key, the
 * endpoint id as associated data: src/domain/webhooks/webhook-secret-box.ts), never the `whsec_...`
 * the owner was shown.
 *
 * A migration cannot seal the rows already there: the master key is the application's
 * (WALLET_MASTER_KEY, or the development key file) and is never handed to Postgres, where it would
 * reach statement logs. So this migration only holds new writes to the sealed form (a check
 * constraint, NOT VALID: the rows already there are not checked yet); the application seals the
 * rows written in clear right after the migrations, at every start (sealStoredWebhookSecrets,
 * src/app/webhooks/seal-stored-secrets.ts), then validates the constraint, after which Postgres
 * itself guarantees no clear secret is left.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_secrets_sealed
      CHECK (secret LIKE 'whseal1.%' AND (previous_secret IS NULL OR previous_secret LIKE 'whseal1.%'))
      NOT VALID`.execute(db);
  await sql`COMMENT ON COLUMN webhook_endpoints.secret IS
    'the signing secret sealed with the master key (whseal1.<iv>.<tag>.<ciphertext>), never in clear'`.execute(
    db,
  );
  await sql`COMMENT ON COLUMN webhook_endpoints.previous_secret IS
    'the rotated-out signing secret, sealed like secret, signing until previous_secret_expires_at'`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_secrets_sealed`.execute(db);
  await sql`COMMENT ON COLUMN webhook_endpoints.secret IS NULL`.execute(db);
  await sql`COMMENT ON COLUMN webhook_endpoints.previous_secret IS NULL`.execute(db);
}
