import { sql } from 'kysely';
import type { Db } from './db.js';

/**
 * Writes API keys' last-use times in the background, many keys in one statement.
 *
 * A note used to be an UPDATE the request awaited, on the read path's pool: under hundreds of
 * writers a second (each key's first use in a minute notes it) those UPDATEs held every read
 * connection while their commits waited for the disk, and readers' key lookups queued behind them
 * for seconds. A last-use time is a hint for the key's owner, not something a request must wait
 * for: notes are gathered for `delayMs` and written together on the write pool, one write at a time.
 */
export interface KeyUseNotes {
  /** Remembers that key `id` was used at `at`; written within `delayMs`. Never waits, never throws. */
  note(id: string, at: Date): void;
  /** Writes every note taken before the call (waiting for a write under way first). */
  flush(): Promise<void>;
  /** Writes what is left and takes no more timers: for shutdown, before the pool closes. */
  close(): Promise<void>;
}

export interface KeyUseNotesOptions {
  delayMs: number;
  /** A write that failed: its notes are kept and tried again with the next write. */
  onError(error: unknown, keys: number): void;
}

export function createKeyUseNotes(db: Db, options: KeyUseNotesOptions): KeyUseNotes {
  let pending = new Map<string, Date>();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  // Writes run one after another: a burst of notes never takes more than one connection.
  let writing: Promise<void> = Promise.resolve();

  const write = async (notes: Map<string, Date>) => {
    const ids = [...notes.keys()];
    const times = ids.map((id) => notes.get(id)!.toISOString());
    try {
      // GREATEST: a note written late never moves a time back past a newer one (another process).
      await sql`
        UPDATE api_keys AS k SET last_used_at = GREATEST(k.last_used_at, n.at)
        FROM unnest(${ids}::text[], ${times}::timestamptz[]) AS n(id, at)
        WHERE k.id = n.id`.execute(db);
    } catch (error) {
      options.onError(error, ids.length);
      // Kept for the next write unless a newer note of the key came meanwhile.
      for (const [id, at] of notes) if (!pending.has(id)) pending.set(id, at);
      if (!closed) schedule();
    }
  };
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    const notes = pending;
    pending = new Map();
    writing = writing.then(() => (notes.size > 0 ? write(notes) : undefined));
    return writing;
  };
  const schedule = () => {
    if (timer) return;
    timer = setTimeout(() => void flush(), options.delayMs);
    timer.unref();
  };
  return {
    note(id, at) {
      const earlier = pending.get(id);
      if (!earlier || earlier < at) pending.set(id, at);
      if (!closed) schedule();
    },
    flush,
    close: () => {
      closed = true;
      return flush();
    },
  };
}
