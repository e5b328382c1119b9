import { readFileSync } from 'node:fs';
import { inForegroundGroup, type KeyReader } from './shutdown-signals.js';

/**
 * stdin as a KeyReader, when it is a TTY and this process is in the terminal's foreground group;
 * undefined otherwise. The terminal's mode is restored on any exit of the process (process.exit
 * included); only a SIGKILL leaves it raw (`stty sane`, or `reset`, brings it back).
 */
export function foregroundTerminal(stdin: NodeJS.ReadStream = process.stdin): KeyReader | undefined {
  if (!stdin.isTTY || !inForegroundGroup(process.platform, () => readFileSync('/proc/self/stat', 'utf8'))) {
    return undefined;
  }
  let raw = false;
  const onKeysOf: Array<(bytes: Buffer) => void> = [];
  const restore = () => {
    if (!raw) return;
    raw = false;
    try {
      stdin.setRawMode(false);
    } catch {
      // the terminal is gone (hung up): nothing to restore
    }
    for (const listener of onKeysOf) stdin.off('data', listener);
    stdin.pause();
  };
  return {
    readKeys(onKeys) {
      stdin.setRawMode(true);
      raw = true;
      process.once('exit', restore);
      const listener = (bytes: Buffer) => onKeys(bytes);
      onKeysOf.push(listener);
      stdin.on('data', listener);
      stdin.resume();
    },
    restore,
  };
}
