import { describe, expect, test } from 'vitest';
import {
  handleShutdownSignals,
  inForegroundGroup,
  isForceKey,
  parseProcStat,
  type KeyReader,
  type ShutdownSignalsOptions,
} from './shutdown-signals.js';

function fakeTerminal(): KeyReader & { type(bytes: number[]): void; raw: boolean } {
  let onKeys: ((bytes: Uint8Array) => void) | undefined;
  const terminal = {
    raw: false,
    readKeys(listener: (bytes: Uint8Array) => void) {
      terminal.raw = true;
      onKeys = listener;
    },
    restore() {
      terminal.raw = false;
    },
    type(bytes: number[]) {
      onKeys?.(Uint8Array.from(bytes));
    },
  };
  return terminal;
}

function harness(terminal: KeyReader | undefined) {
  const events: string[] = [];
  const options: ShutdownSignalsOptions = {
    log: {
      info: (message) => events.push(`info ${message}`),
      warn: (message) => events.push(`warn ${message}`),
      debug: (message) => events.push(`debug ${message}`),
    },
    timeoutMs: 30_000,
    openTerminal: () => {
      events.push('terminal asked');
      return terminal;
    },
    stop: (signal) => events.push(`stop ${signal}`),
    force: () => events.push('force'),
  };
  return { events, signals: handleShutdownSignals(options) };
}

describe('handleShutdownSignals', () => {
  test('the first signal starts the stop once; every later one is ignored, however late', () => {
    const { events, signals } = harness(undefined);
    signals.onSignal('SIGINT');
    // Copies relayed by npm and tsx arrive at any time: none of them forces anything.
    signals.onSignal('SIGINT');
    signals.onSignal('SIGTERM');
    signals.onSignal('SIGINT');
    expect(events.filter((e) => e.startsWith('stop'))).toEqual(['stop SIGINT']);
    expect(events).not.toContain('force');
    expect(events.filter((e) => e.startsWith('debug'))).toHaveLength(3);
    expect(events.find((e) => e.startsWith('debug'))).toMatch(
      /SIGINT ignored: already stopping since SIGINT/,
    );
  });

  test('without a terminal to read it says that further signals are ignored, with the deadline', () => {
    const { events, signals } = harness(undefined);
    signals.onSignal('SIGTERM');
    expect(events).toEqual([
      'terminal asked',
      'info SIGTERM: stopping (up to 30 s); further signals are ignored until then',
      'stop SIGTERM',
    ]);
  });

  test('with a terminal, a Ctrl-C typed after the first signal exits without waiting, once', () => {
    const terminal = fakeTerminal();
    const { events, signals } = harness(terminal);
    signals.onSignal('SIGINT');
    expect(terminal.raw).toBe(true);
    expect(events).toContain(
      'info SIGINT: stopping (up to 30 s); press Ctrl-C again to exit without waiting',
    );
    expect(events).not.toContain('force');

    terminal.type([0x61, 0x0d]); // "a", Enter: nothing
    signals.onSignal('SIGINT'); // a relayed copy: nothing
    expect(events).not.toContain('force');

    expect(terminal.raw).toBe(true);
    terminal.type([0x03]);
    terminal.type([0x03]);
    expect(events.filter((e) => e === 'force')).toHaveLength(1);
    // Put back before force(), which may end the process without running exit handlers.
    expect(terminal.raw).toBe(false);
    expect(events).toContain('warn Ctrl-C again: exiting without waiting');
  });

  test('the terminal is asked for at the first signal only (the process may have moved to the background)', () => {
    const { events, signals } = harness(undefined);
    expect(events).toEqual([]);
    signals.onSignal('SIGINT');
    signals.onSignal('SIGINT');
    expect(events.filter((e) => e === 'terminal asked')).toHaveLength(1);
  });
});

describe('isForceKey', () => {
  test('is Ctrl-C or Ctrl-\\ anywhere in what was typed', () => {
    expect(isForceKey(Uint8Array.from([0x03]))).toBe(true);
    expect(isForceKey(Uint8Array.from([0x61, 0x1c]))).toBe(true);
    expect(isForceKey(Uint8Array.from([0x61, 0x62, 0x0d]))).toBe(false);
    expect(isForceKey(Uint8Array.from([]))).toBe(false);
  });
});

describe('foreground process group', () => {
  // Fields: pid (comm) state ppid pgrp session tty_nr tpgid ...
  const stat = (comm: string, pgrp: number, tpgid: number) =>
    `4242 (${comm}) S 4200 ${pgrp} 4100 34816 ${tpgid} 4194560 120 0 0 0 1 2 0 0 20 0 11 0 1000 0`;

  test('parses the process group and the terminal foreground group, whatever the command name', () => {
    expect(parseProcStat(stat('node', 4200, 4200))).toEqual({ pgrp: 4200, tpgid: 4200 });
    expect(parseProcStat(stat('a (weird) name', 4200, 4300))).toEqual({ pgrp: 4200, tpgid: 4300 });
    expect(parseProcStat('garbage')).toBeUndefined();
  });

  test('reads the terminal only in its foreground group, on Linux', () => {
    expect(inForegroundGroup('linux', () => stat('node', 4200, 4200))).toBe(true);
    // Started with `&`, or moved there with Ctrl-Z + bg: a read would stop it with SIGTTIN.
    expect(inForegroundGroup('linux', () => stat('node', 4200, 4300))).toBe(false);
    // No controlling terminal (a service manager, a container): tpgid -1.
    expect(inForegroundGroup('linux', () => stat('node', 4200, -1))).toBe(false);
    expect(inForegroundGroup('darwin', () => stat('node', 4200, 4200))).toBe(false);
    expect(
      inForegroundGroup('linux', () => {
        throw new Error('ENOENT');
      }),
    ).toBe(false);
  });

  test('this test process: a readable /proc/self/stat parses', async () => {
    if (process.platform !== 'linux') return;
    const { readFileSync } = await import('node:fs');
    const parsed = parseProcStat(readFileSync('/proc/self/stat', 'utf8'));
    expect(parsed?.pgrp).toBeGreaterThan(0);
  });
});
