import { fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A helper process of a bench (the writer, the webhook receiver): the module `moduleUrl` run again
 * as a child with tsx, sharing stdout and stderr, driven over IPC; its work (an HTTP client or
 * server) then costs the measured service's event loop nothing. `ask` sends a message (none:
 * only waits) and resolves with the child's next message of type `answer`, or rejects when the
 * child exits first; `close` disconnects it, its cue to exit, and waits until it did.
 */
export function forkBenchChild<FromChild extends { type: string }>(moduleUrl: string) {
  const file = fileURLToPath(moduleUrl);
  const child = fork(file, [], {
    cwd: path.dirname(path.dirname(file)),
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return {
    pid: child.pid!,
    ask: <T extends FromChild['type']>(message: object | undefined, answer: T) =>
      new Promise<Extract<FromChild, { type: T }>>((resolve, reject) => {
        const onMessage = (reply: FromChild) => {
          if (reply.type !== answer) return;
          child.off('exit', onExit);
          child.off('message', onMessage);
          resolve(reply as Extract<FromChild, { type: T }>);
        };
        const onExit = (code: number | null) => {
          child.off('message', onMessage);
          reject(new Error(`${path.basename(file)} exited (${code}) before answering ${answer}`));
        };
        child.on('message', onMessage);
        child.once('exit', onExit);
        if (message) child.send(message);
      }),
    close: async (): Promise<void> => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const closed = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.disconnect();
      await closed;
    },
  };
}
