import { sql, type Kysely } from 'kysely';

/**
 * Webhook fairness (issue 49): a replay in flight is remembered so a second one is refused while
 * the first is still being sent. `replay_through` is the account's last sequence when the replay
 * was asked (null: no replay, or one with nothing to send); the replay is in flight while
 * `delivered_through < replay_through`.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE webhook_endpoints ADD COLUMN replay_through bigint`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE webhook_endpoints DROP COLUMN replay_through`.execute(db);
}
