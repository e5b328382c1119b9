/**
 * What a stop signal means: the first SIGINT or SIGTERM starts the orderly stop; any later signal
 * is ignored. A later signal cannot be told from a copy of the first: a terminal's Ctrl-C reaches
 * every process of its foreground group, and npm (and tsx, when it runs the service) relay it once
 * more to their child, late on a loaded machine. A second Ctrl-C is therefore read as a key, from
 * the terminal itself, when this process may read it: stdin is a TTY whose foreground process
 * group is ours (read from a background group, the kernel would stop the process with SIGTTIN).
 * Then the terminal is put in raw mode after the first signal, which also turns Ctrl-C into a byte
 * for whoever reads instead of a SIGINT for everyone, and that byte means "exit without waiting".
 */

/** The byte a terminal in raw mode delivers for Ctrl-C (in cooked mode it raises SIGINT instead). */
export const CTRL_C = 0x03;
/** Ctrl-\ (SIGQUIT in cooked mode): also taken as "exit without waiting" once in raw mode. */
export const CTRL_BACKSLASH = 0x1c;

/** The terminal this process may read keys from (see `foregroundTerminal`). */
export interface KeyReader {
  /** Raw mode on, and every chunk typed from now on to `onKeys`. */
  readKeys(onKeys: (bytes: Uint8Array) => void): void;
  /** The terminal's mode as it was before readKeys (safe to call more than once). */
  restore(): void;
}

export interface ShutdownSignalsOptions {
  log: {
    info(message: string): void;
    warn(message: string): void;
    debug(message: string): void;
  };
  /** The deadline of the stop, for the message at the first signal. */
  timeoutMs: number;
  /** The terminal to read a second Ctrl-C from, asked at the first signal; undefined: none. */
  openTerminal: () => KeyReader | undefined;
  /** Starts the orderly stop (called once). */
  stop(signal: NodeJS.Signals): void;
  /** Ends the process at once, without waiting for the stop (a second Ctrl-C). */
  force(): void;
}

export interface ShutdownSignals {
  /** To be called for every SIGINT and SIGTERM the process receives (a listener as it is). */
  onSignal: (signal: NodeJS.Signals) => void;
}

export function handleShutdownSignals(options: ShutdownSignalsOptions): ShutdownSignals {
  const { log } = options;
  let stopping: NodeJS.Signals | undefined;
  let forced = false;
  return {
    onSignal: (signal) => {
      if (stopping) {
        log.debug(
          `${signal} ignored: already stopping since ${stopping} (npm and tsx relay copies of one Ctrl-C; ` +
            `a second press counts only as a key typed in the terminal)`,
        );
        return;
      }
      stopping = signal;
      const seconds = Math.ceil(options.timeoutMs / 1000);
      const terminal = options.openTerminal();
      if (terminal) {
        terminal.readKeys((bytes) => {
          if (forced || !isForceKey(bytes)) return;
          forced = true;
          log.warn('Ctrl-C again: exiting without waiting');
          // force() may end the process without its exit handlers (exit-at-once.ts): the
          // terminal's mode is put back here, not left to them.
          terminal.restore();
          options.force();
        });
        log.info(`${signal}: stopping (up to ${seconds} s); press Ctrl-C again to exit without waiting`);
      } else {
        log.info(`${signal}: stopping (up to ${seconds} s); further signals are ignored until then`);
      }
      options.stop(signal);
    },
  };
}

/** Whether a chunk read from a raw-mode terminal holds a Ctrl-C (or Ctrl-\). */
export function isForceKey(bytes: Uint8Array): boolean {
  return bytes.includes(CTRL_C) || bytes.includes(CTRL_BACKSLASH);
}

/** The process group and the terminal's foreground process group, from /proc/<pid>/stat. */
export function parseProcStat(stat: string): { pgrp: number; tpgid: number } | undefined {
  // "pid (comm) state ppid pgrp session tty_nr tpgid ...": comm may hold spaces and parentheses.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const pgrp = Number(fields[2]);
  const tpgid = Number(fields[5]);
  if (!Number.isInteger(pgrp) || !Number.isInteger(tpgid)) return undefined;
  return { pgrp, tpgid };
}

/**
 * True when this process is in its terminal's foreground process group (Linux only: elsewhere
 * the answer is unknown, so false, and no second Ctrl-C is read).
 */
export function inForegroundGroup(platform: NodeJS.Platform, readStat: () => string): boolean {
  if (platform !== 'linux') return false;
  let parsed;
  try {
    parsed = parseProcStat(readStat());
  } catch {
    return false;
  }
  // tpgid is -1 without a controlling terminal.
  return parsed !== undefined && parsed.tpgid > 0 && parsed.pgrp === parsed.tpgid;
}
