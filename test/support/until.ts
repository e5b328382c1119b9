import { setTimeout as sleep } from 'node:timers/promises';

/** Reads until `done` says so, every 200 ms; past `ms` fails naming `what` and the last value read. */
export async function until<T>(
  what: string,
  read: () => Promise<T>,
  done: (value: T) => boolean,
  ms = 60_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`${what}: not within ${ms} ms (last: ${JSON.stringify(value)})`);
    await sleep(200);
  }
}
