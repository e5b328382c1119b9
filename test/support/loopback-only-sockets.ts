import net from 'node:net';
import { afterAll, beforeAll, vi, type MockInstance } from 'vitest';

function isLoopback(address: string): boolean {
  return (
    address === '::1' || address === 'localhost' || /^127\./.test(address) || address === '::ffff:127.0.0.1'
  );
}

/**
 * From this file's beforeAll to its afterAll, every TCP connection this process opens goes through
 * a guard: one to anything but loopback throws before a packet leaves (and is counted), so a
 * refusal is proven without connecting. A name other than localhost connects only through a lookup
 * that answers loopback (the webhook sender's pinned lookup). Returns the hosts tried, in order.
 * Call it at the top of a test file.
 */
export function loopbackOnlySockets(): string[] {
  const connectAttempts: string[] = [];
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called with the socket as `this` below
  const originalConnect = net.Socket.prototype.connect;
  let spy: MockInstance | undefined;

  beforeAll(() => {
    spy = vi.spyOn(net.Socket.prototype, 'connect').mockImplementation(function (
      this: net.Socket,
      ...args: unknown[]
    ) {
      const first = args[0];
      // net.createConnection hands a pre-normalized [options, callback] array.
      const options = (
        Array.isArray(first) ? first[0] : typeof first === 'object' ? first : { host: args[1] }
      ) as {
        host?: string;
        path?: string;
        lookup?: (hostname: string, options: object, callback: (...result: unknown[]) => void) => void;
      };
      if (!options.path) {
        const host = options.host ?? 'localhost';
        connectAttempts.push(host);
        if (net.isIP(host) && !isLoopback(host)) throw new Error(`test guard: no connection to ${host}`);
        if (!net.isIP(host) && host !== 'localhost') {
          // A name: only through a lookup that answers loopback (the sender's pinned lookup).
          const lookup = options.lookup;
          if (!lookup) throw new Error(`test guard: no connection to ${host} through DNS`);
          options.lookup = (hostname, lookupOptions, callback) =>
            lookup(hostname, lookupOptions, (error, address, family) => {
              const addresses = Array.isArray(address)
                ? address.map((a: { address: string }) => a.address)
                : [address];
              if (!error && addresses.some((a) => !isLoopback(String(a))))
                return callback(new Error(`test guard: ${host} looked up as ${addresses.join(', ')}`));
              callback(error, address, family);
            });
        }
      }
      return originalConnect.apply(this, args as Parameters<typeof originalConnect>);
    });
  });
  afterAll(() => {
    spy?.mockRestore();
  });
  return connectAttempts;
}
