import type { Db } from '../../adapters/postgres/db.js';
import {
  listUnsealedWebhookSecrets,
  replaceWebhookSecrets,
  validateSealedWebhookSecrets,
  webhookSecretsSealedValidated,
} from '../../adapters/postgres/webhook-secrets.repository.js';
import { isSealedWebhookSecret, type WebhookSecretBox } from '../../domain/webhooks/webhook-secret-box.js';

/** Rows sealed per read: each is one UPDATE, and a deployment has at most 5 per account. */
const BATCH = 500;

/**
 * Seals every webhook secret still stored in clear (written before secrets were sealed at rest),
 * then has Postgres validate that none is left. Runs at every start, right after the migrations
 * (openApp's migrate): a migration cannot do it, the master key never reaches Postgres.
 * Idempotent, and safe with several processes starting at once: each swap is a compare-and-set on
 * the clear values it read, so a row another process (or a rotation) changed meanwhile is read
 * again. Answers how many endpoints this call sealed. Once the constraint is validated (the first
 * start after the migration) a start only reads that flag: no scan of the endpoints, and no ALTER
 * TABLE (and its lock) at every start of every process.
 */
export async function sealStoredWebhookSecrets(db: Db, box: Pick<WebhookSecretBox, 'seal'>): Promise<number> {
  if (await webhookSecretsSealedValidated(db)) return 0;
  let sealed = 0;
  for (;;) {
    const rows = await listUnsealedWebhookSecrets(db, BATCH);
    if (rows.length === 0) break;
    for (const row of rows) {
      const seal = (value: string) => (isSealedWebhookSecret(value) ? value : box.seal(value, row.id));
      const swapped = await replaceWebhookSecrets(db, row, {
        secret: seal(row.secret),
        previousSecret: row.previous_secret === null ? null : seal(row.previous_secret),
      });
      if (swapped) sealed++;
    }
  }
  await validateSealedWebhookSecrets(db);
  return sealed;
}
