import { Counter, type Registry } from 'prom-client';

/**
 * A one-label counter for a hot path: `hit` adds to a plain number, and the sums are handed to
 * prom-client only when the counter is read (a scrape, `get()`). prom-client's own `inc` hashes
 * and validates its labels on every call, which on the cached reads cost about 1 % of a whole
 * answer (0.18-0.28 µs of 26-31 µs, measured 2026-11-28).
 */
export class FoldedCounter<L extends string> {
  private readonly pending = new Map<string, number>();
  readonly counter: Counter<L>;

  constructor(config: { name: string; help: string; labelName: L; registers: Registry[] }) {
    const pending = this.pending;
    const label = config.labelName;
    this.counter = new Counter<L>({
      name: config.name,
      help: config.help,
      labelNames: [label],
      registers: config.registers,
      collect() {
        for (const [value, n] of pending) this.inc({ [label]: value } as Partial<Record<L, string>>, n);
        pending.clear();
      },
    });
  }

  /** One more for `value` of the label. */
  hit(value: string): void {
    this.pending.set(value, (this.pending.get(value) ?? 0) + 1);
  }

  /** The counter's values, the hits so far folded in. */
  get(): ReturnType<Counter<L>['get']> {
    return this.counter.get();
  }
}
