/**
 * Read-your-writes for the read caches (read-cache.ts): which accounts wrote in this process, and
 * when, on one clock that cached computations also read when they start.
 *
 * The clock is a sequence number, not time: `record` moves it on, so a computation that started
 * after a write (its `startedAt` is at least the write's number) ran its reads after the write
 * committed and shows it; one that started before may not. A cached entry is never given to an
 * account whose last write here is newer than the entry's start, whatever else says it is fresh.
 *
 * Bounded: at most `maxAccounts` are remembered (the oldest writer is forgotten first). A forgotten
 * account's write is not lost: `floor` rises to its number and counts as every unknown account's
 * last write, so entries older than it are refreshed once for everybody rather than shown to a
 * writer who no longer has an entry.
 */
export interface RecentWrites {
  /** The account's write has committed (before its answer leaves). */
  record(accountId: string): void;
  /** What a computation must have started at or after to show every write of the account here. */
  since(accountId: string | undefined): number;
  /** The clock now: a computation starting now reflects every write recorded so far. */
  now(): number;
}

/** Distinct writers remembered at once: about what writes within a few seconds on one process. */
const DEFAULT_MAX_ACCOUNTS = 10_000;

export function createRecentWrites(maxAccounts = DEFAULT_MAX_ACCOUNTS): RecentWrites {
  let clock = 0;
  let floor = 0;
  // Insertion order is write order (a writer is moved to the end on each write): the first key is
  // the writer whose last write is the oldest.
  const last = new Map<string, number>();
  return {
    record: (accountId) => {
      clock += 1;
      last.delete(accountId);
      last.set(accountId, clock);
      if (last.size > maxAccounts) {
        const [oldest, at] = last.entries().next().value!;
        last.delete(oldest);
        floor = Math.max(floor, at);
      }
    },
    since: (accountId) => (accountId === undefined ? floor : Math.max(floor, last.get(accountId) ?? 0)),
    now: () => clock,
  };
}
