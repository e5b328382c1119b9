import net from 'node:net';

/** Asks the kernel for a port that is free right now on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not read the port the kernel assigned'));
      });
    });
  });
}

/** True when `port` can be bound on 127.0.0.1 right now. */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * Two consecutive free ports (the localnet's RPC and WebSocket), from below the kernel's ephemeral
 * range: ports freePort hands out (to the embedded Postgres and Redis started next) come from that
 * range, so they can never take the second port before the localnet binds it.
 */
export async function freePortPair(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 10_000);
    if ((await isFree(base)) && (await isFree(base + 1))) return base;
  }
  throw new Error('found no two consecutive free ports from 20000 to 30000');
}
