import { performance } from 'node:perf_hooks';

export interface Progress {
  /** Adds `n` finished items. */
  advance(n: number): void;
  /** Prints the final line (100% or wherever it stopped). */
  finish(): void;
}

/** Redraws on a terminal at most this often: a redraw per item would cost more than the work. */
const REDRAW_MS = 100;
const BAR_WIDTH = 30;

/**
 * A progress bar on stderr (stdout stays for results): `label [#####.....] done/total  rate/s  ETA`.
 * On a terminal it redraws one line with \r; in a log or a pipe a redrawn line would be noise, so
 * it prints a line at every further 10% instead.
 */
export function createProgress(
  label: string,
  total: number,
  stream: NodeJS.WriteStream = process.stderr,
): Progress {
  const started = performance.now();
  const tty = stream.isTTY === true;
  let done = 0;
  let lastDraw = 0;
  let lastDecile = -1;

  const line = (): string => {
    const seconds = (performance.now() - started) / 1000;
    const rate = seconds > 0 ? done / seconds : 0;
    const fraction = total > 0 ? Math.min(1, done / total) : 1;
    const filled = Math.round(fraction * BAR_WIDTH);
    const eta = rate > 0 && done < total ? `ETA ${formatSeconds((total - done) / rate)}` : '';
    return (
      `${label} [${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${done}/${total}` +
      ` ${(fraction * 100).toFixed(0).padStart(3)}%  ${rate.toFixed(0)}/s  ${formatSeconds(seconds)} ${eta}`
    ).trimEnd();
  };

  const draw = (final: boolean): void => {
    if (tty) {
      const now = performance.now();
      if (!final && now - lastDraw < REDRAW_MS) return;
      lastDraw = now;
      stream.write(`\r${line()}\u001b[K${final ? '\n' : ''}`);
      return;
    }
    const decile = total > 0 ? Math.floor((Math.min(done, total) / total) * 10) : 10;
    if (final || decile > lastDecile) {
      lastDecile = decile;
      stream.write(`${line()}\n`);
    }
  };

  draw(false);
  return {
    advance: (n) => {
      done += n;
      draw(false);
    },
    finish: () => {
      // Not a TTY: a 100% line printed already is not repeated.
      if (tty || lastDecile < 10) draw(true);
    },
  };
}

function formatSeconds(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const s = Math.round(seconds);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}
