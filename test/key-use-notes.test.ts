import { sql } from 'kysely';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createKeyUseNotes } from '../src/adapters/postgres/key-use-notes.js';
import { createDb } from '../src/adapters/postgres/db.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { authenticate, createApiKey } from '../src/domain/auth/api-keys.service.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
beforeAll(async () => {
  env = await openTestEnv({}, { clickhouse: false });
});
afterAll(async () => {
  await env?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function newKey(handle: string) {
  const account = await createAccount(env.app, { handle });
  const { key, info } = await createApiKey(env.app.apiKeys, account.id);
  return { key, id: info.id, accountId: account.id };
}

const lastUsedAt = async (id: string) =>
  (
    await env.app.db
      .selectFrom('api_keys')
      .select('last_used_at')
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
  ).last_used_at;

test('notes are written together after the delay, never earlier than asked, never backwards', async () => {
  const first = await newKey('notes_first');
  const second = await newKey('notes_second');
  const errors: unknown[] = [];
  // Long enough that the reads below surely come before the write, on a busy CI machine too.
  const notes = createKeyUseNotes(env.app.db, { delayMs: 1_000, onError: (err) => errors.push(err) });
  const t1 = new Date('2026-11-25T10:00:00.000Z');
  const t2 = new Date('2026-11-25T10:00:05.000Z');
  notes.note(first.id, t1);
  notes.note(second.id, t1);
  notes.note(first.id, t2);
  notes.note(first.id, t1); // an older note of the same key does not win
  expect(await lastUsedAt(first.id)).toBeNull();
  await expect.poll(() => lastUsedAt(first.id), { timeout: 5_000 }).toEqual(t2);
  expect(await lastUsedAt(second.id)).toEqual(t1);

  // A note older than the stored time (another process wrote a newer one) leaves it.
  notes.note(first.id, t1);
  await notes.flush();
  expect(await lastUsedAt(first.id)).toEqual(t2);
  await notes.close();
  expect(errors).toEqual([]);
});

test('a request does not wait for its key note, and the owner sees it in the key list', async () => {
  const { key, id, accountId } = await newKey('notes_owner');
  // Every write connection held: the note cannot be written, yet authentication answers.
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let started = 0;
  const held = Array.from({ length: 20 }, () =>
    env.app.db.transaction().execute(async () => {
      started++;
      await gate;
    }),
  );
  try {
    // Every connection of the write pool (20) is in a transaction before the key is used.
    await expect.poll(() => started, { timeout: 5_000 }).toBe(20);
    const viewer = await Promise.race([
      authenticate(env.app.apiKeys, `Bearer ${key}`),
      sleep(3_000).then(() => Promise.reject(new Error('authentication waited for its note'))),
    ]);
    expect(viewer.keyId).toBe(id);
  } finally {
    release();
    await Promise.all(held);
  }
  const [listed] = await env.app.apiKeys.list(accountId);
  expect(listed?.lastUsedAt).toBeInstanceOf(Date);
  expect(await lastUsedAt(id)).toEqual(listed?.lastUsedAt);
});

test('a write that fails is reported, kept, and written by the next one', async () => {
  const { id } = await newKey('notes_retry');
  // One connection, whose statements give up after 100 ms waiting for a row lock.
  const impatient = createDb(env.config.DATABASE_URL!, { max: 1 });
  await sql`SET lock_timeout = 100`.execute(impatient);
  const errors: number[] = [];
  const notes = createKeyUseNotes(impatient, { delayMs: 50, onError: (_err, keys) => errors.push(keys) });
  const at = new Date('2026-11-25T11:00:00.000Z');
  try {
    await env.app.db.transaction().execute(async (trx) => {
      await trx.selectFrom('api_keys').select('id').where('id', '=', id).forUpdate().execute();
      notes.note(id, at);
      await notes.flush();
      expect(errors).toEqual([1]);
    });
    // The key's row is free again: the retry scheduled after the failure writes the note.
    await expect.poll(() => lastUsedAt(id), { timeout: 3_000 }).toEqual(at);
  } finally {
    await notes.close();
    await impatient.destroy();
  }
});
