import { ClickHouseClient } from '@clickhouse/client';

/**
 * Bench-only preload (`node --import tsx --import ./bench/chaos-clickhouse-fault.ts src/main.ts`):
 * chdb runs inside the service, so "ClickHouse is down" can only be played from inside it. SIGUSR2
 * toggles the fault (nothing in src/ uses that signal); while it is on, every query, insert,
 * command and exec rejects as a server that refuses connections would.
 *
 * `createClient` of @clickhouse/client returns the common base class, not the exported
 * `ClickHouseClient` (a subclass that only overrides `query`): the base prototype is the one to
 * patch. The count of refused calls printed when the fault ends shows the patch reached the
 * service's client (same module instance).
 */
const base = Object.getPrototypeOf(ClickHouseClient.prototype) as Record<string, unknown>;
const METHODS = ['query', 'insert', 'command', 'exec'] as const;

let faulty = false;
let refused = 0;

for (const name of METHODS) {
  const original = base[name];
  if (typeof original !== 'function') throw new Error(`ClickHouseClient has no ${name}()`);
  base[name] = function (this: unknown, ...args: unknown[]): unknown {
    if (!faulty) return (original as (...a: unknown[]) => unknown).apply(this, args);
    refused += 1;
    const error = new Error('connect ECONNREFUSED 127.0.0.1:8123') as NodeJS.ErrnoException;
    error.code = 'ECONNREFUSED';
    return Promise.reject(error);
  };
}

process.on('SIGUSR2', () => {
  faulty = !faulty;
  if (faulty) refused = 0;
  console.error(`chaos: clickhouse fault ${faulty ? 'on' : `off after ${refused} refused calls`}`);
});
