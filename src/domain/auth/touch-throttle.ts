/**
 * Decides when a key's last-use time is worth writing: at most once per `intervalMs` per key, not
 * on every request. It remembers when each key was last written, and only for as long as that
 * matters: an entry older than the interval decides nothing (the next use writes anyway), so it is
 * dropped, and past `maxEntries` the oldest go first. Forgetting a key costs one extra UPDATE, never
 * a wrong answer; without the bound the map held one entry per key ever used, for the life of the
 * process.
 */
export interface TouchThrottle {
  /** True when `id`'s last use should be written now (and records that it is). */
  shouldTouch(id: string, nowMs: number): boolean;
  /** Keys remembered: at most `maxEntries`. */
  readonly size: number;
}

export function createTouchThrottle(options: { intervalMs: number; maxEntries: number }): TouchThrottle {
  const { intervalMs, maxEntries } = options;
  // Insertion order is write order (an entry is deleted before it is set again), so the first
  // entries are always the oldest: pruning looks at the front only.
  const lastWritten = new Map<string, number>();
  const prune = (nowMs: number) => {
    for (const [id, at] of lastWritten) {
      if (lastWritten.size <= maxEntries && nowMs - at <= intervalMs) break;
      lastWritten.delete(id);
    }
  };
  return {
    shouldTouch(id, nowMs) {
      const last = lastWritten.get(id);
      if (last !== undefined && nowMs - last <= intervalMs) return false;
      lastWritten.delete(id);
      lastWritten.set(id, nowMs);
      prune(nowMs);
      return true;
    },
    get size() {
      return lastWritten.size;
    },
  };
}
