import type { Check } from './chaos-books.js';
import type { Attempt } from './chaos-client.js';

/** One row of the table: the attempts started in a window, and its recovery. */
export interface WindowRow {
  name: string;
  ok: number;
  refused: number;
  /** Clean 503s, dropped connections, 409s (key held) and hangs: every non-final attempt. */
  errors: number;
  clean503: number;
  dropped: number;
  /** 409: the key was still held by an earlier attempt (retried). */
  busy: number;
  internal: number;
  hangs: number;
  /** From "back" to the end of the first 2xx paid write after it; undefined: none, or no fault. */
  recoveryMs: number | undefined;
  hasFault: boolean;
  /** Up to 3 quoted 5xx answers with internal detail, and hangs. */
  samples: string[];
}

export function windowRow(
  name: string,
  attempts: readonly Attempt[],
  from: number,
  to: number,
  backAt: number | undefined,
): WindowRow {
  const inWindow = attempts.filter((a) => a.startedAt >= from && a.startedAt < to);
  const count = (kind: Attempt['kind']) => inWindow.filter((a) => a.kind === kind).length;
  const firstOk =
    backAt === undefined
      ? undefined
      : attempts
          .filter((a) => a.paid && a.kind === 'ok' && a.endedAt >= backAt)
          .reduce<number | undefined>(
            (min, a) => (min === undefined || a.endedAt < min ? a.endedAt : min),
            undefined,
          );
  return {
    name,
    ok: count('ok'),
    refused: count('refused'),
    errors: count('unavailable') + count('dropped') + count('busy') + count('hang') + count('internal'),
    clean503: count('unavailable'),
    dropped: count('dropped'),
    busy: count('busy'),
    internal: count('internal'),
    hangs: count('hang'),
    recoveryMs: firstOk === undefined || backAt === undefined ? undefined : firstOk - backAt,
    hasFault: backAt !== undefined,
    samples: inWindow
      .filter((a) => a.kind === 'internal' || a.kind === 'hang')
      .slice(0, 3)
      .map((a) => a.detail ?? a.kind),
  };
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

/** Prints both tables; true when every target and check passed. */
export function printReport(rows: WindowRow[], checks: Check[], recoveryTargetMs: number): boolean {
  let pass = true;
  const faultRows = rows.map((r) => {
    const recovered = !r.hasFault || (r.recoveryMs !== undefined && r.recoveryMs <= recoveryTargetMs);
    const ok = r.internal === 0 && r.hangs === 0 && recovered;
    pass &&= ok;
    return [
      r.name,
      String(r.ok),
      String(r.refused),
      `${r.errors} (503 ${r.clean503}, dropped ${r.dropped}, 409 ${r.busy})`,
      String(r.internal),
      String(r.hangs),
      !r.hasFault ? '-' : r.recoveryMs === undefined ? 'never' : `${(r.recoveryMs / 1000).toFixed(1)} s`,
      ok ? 'PASS' : 'FAIL',
    ];
  });
  console.log(
    `\nRequests started in each window (fault + settle); targets: 0 internal 5xx, 0 hangs, ` +
      `recovery <= ${recoveryTargetMs / 1000} s\n`,
  );
  console.log(
    table(['fault', 'ok', 'refused', 'errors', '5xx internal', 'hangs', 'recovery', 'result'], faultRows),
  );
  for (const r of rows) for (const s of r.samples) console.log(`  ${r.name}: ${s}`);
  console.log('\nEnd-of-run checks\n');
  console.log(
    table(
      ['check', 'result', 'detail'],
      checks.map((c) => [c.name, c.pass ? 'PASS' : 'FAIL', c.detail]),
    ),
  );
  pass &&= checks.every((c) => c.pass);
  console.log(`\nchaos: ${pass ? 'PASS' : 'FAIL'}`);
  return pass;
}
