import { performance } from 'node:perf_hooks';
import pg from 'pg';

/**
 * What the service's Postgres sessions do during a run, sampled from pg_stat_activity every
 * 250 ms on a connection of its own (not one of the service's pool, which it would take from the
 * load). With the service's event-loop delay it tells where a slow read waits: many sessions
 * active and waiting on locks, all of them busy (the pool is the queue), or few busy (the wait is
 * elsewhere).
 */
export interface PgActivity {
  stop: () => Promise<string>;
}

interface Sample {
  /** Client sessions open (the service's pools: when all are busy, queries queue for one). */
  open: number;
  active: number;
  idleInTransaction: number;
  /** Active sessions by wait_event_type ('CPU' when not waiting). */
  waiting: Map<string, number>;
}

export async function samplePgActivity(url: string): Promise<PgActivity> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const samples: Sample[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      const { rows } = await client.query<{ state: string; wait: string | null; n: number }>(
        `SELECT state, wait_event_type AS wait, count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()
          GROUP BY 1, 2`,
      );
      const sample: Sample = { open: 0, active: 0, idleInTransaction: 0, waiting: new Map() };
      for (const row of rows) {
        sample.open += row.n;
        if (row.state === 'active') {
          sample.active += row.n;
          const kind = row.wait ?? 'CPU';
          sample.waiting.set(kind, (sample.waiting.get(kind) ?? 0) + row.n);
        } else if (row.state?.startsWith('idle in transaction')) sample.idleInTransaction += row.n;
      }
      samples.push(sample);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 250 - (performance.now() - started))));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop.finally(() => client.end());
      if (samples.length === 0) return 'Postgres sessions: no sample';
      const mean = (pick: (s: Sample) => number) =>
        samples.reduce((sum, s) => sum + pick(s), 0) / samples.length;
      const kinds = new Set(samples.flatMap((s) => [...s.waiting.keys()]));
      const byKind = [...kinds]
        .map((kind) => [kind, mean((s) => s.waiting.get(kind) ?? 0)] as const)
        .sort((a, b) => b[1] - a[1])
        .map(([kind, n]) => `${kind} ${n.toFixed(1)}`)
        .join(', ');
      return (
        `Postgres sessions (mean of ${samples.length} samples): ${mean((s) => s.open).toFixed(1)} open,` +
        ` ${mean((s) => s.active).toFixed(1)} active` +
        (byKind ? ` (${byKind})` : '') +
        `, ${mean((s) => s.idleInTransaction).toFixed(1)} idle in transaction`
      );
    },
  };
}
