import { sql } from 'kysely';
import type { Db } from './db.js';

/*
 * The sealing of webhook secrets written in clear before they were sealed at rest (schema/postgres/
 * 2026_11_29_b_sealed_webhook_secrets.ts). The sealing itself is the application's (it holds the
 * master key): these statements only find such rows, swap them, and have Postgres check the rest.
 */

/** The sealed form's prefix, as the migration's check constraint spells it. */
const SEALED_LIKE = 'whseal1.%';
const CONSTRAINT = 'webhook_endpoints_secrets_sealed';

export interface StoredWebhookSecrets {
  id: string;
  secret: string;
  previous_secret: string | null;
}

/** Endpoints whose secret or previous secret is not sealed, up to `limit`. */
export async function listUnsealedWebhookSecrets(db: Db, limit: number): Promise<StoredWebhookSecrets[]> {
  const { rows } = await sql<StoredWebhookSecrets>`
    SELECT id, secret, previous_secret FROM webhook_endpoints
     WHERE secret NOT LIKE ${SEALED_LIKE} OR previous_secret NOT LIKE ${SEALED_LIKE}
     ORDER BY id
     LIMIT ${limit}`.execute(db);
  return rows;
}

/**
 * Replaces an endpoint's secrets with their sealed forms, unless they changed since `was` was read
 * (a rotation meanwhile: the caller reads again). False when they had.
 */
export async function replaceWebhookSecrets(
  db: Db,
  was: StoredWebhookSecrets,
  sealed: { secret: string; previousSecret: string | null },
): Promise<boolean> {
  const result = await db
    .updateTable('webhook_endpoints')
    .set({ secret: sealed.secret, previous_secret: sealed.previousSecret })
    .where('id', '=', was.id)
    .where('secret', '=', was.secret)
    .where(sql<boolean>`previous_secret IS NOT DISTINCT FROM ${was.previous_secret}`)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Whether Postgres has checked every row against the sealed-secrets constraint (validated once,
 * it holds every later write to it too): no row can hold a clear secret, nothing is left to seal.
 */
export async function webhookSecretsSealedValidated(db: Db): Promise<boolean> {
  const { rows } = await sql<{ convalidated: boolean }>`
    SELECT convalidated FROM pg_constraint
     WHERE conrelid = 'webhook_endpoints'::regclass AND conname = ${CONSTRAINT}`.execute(db);
  return rows[0]?.convalidated === true;
}

/**
 * Has Postgres check every row against the sealed-secrets constraint (a no-op once it has): from
 * then on no row can hold a clear secret. Fails, naming the constraint, if one still does.
 */
export async function validateSealedWebhookSecrets(db: Db): Promise<void> {
  await sql`ALTER TABLE webhook_endpoints VALIDATE CONSTRAINT ${sql.ref(CONSTRAINT)}`.execute(db);
}
