import net from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of the service that loses answers: the answer to a request
 * that `drops` matches (by its request line and body text) is lost once the server starts sending
 * it, that is after the server did the work. `cut` closes the connection (the client sees it
 * dropped, as on a flaky network); `stall` keeps it open and silent (as behind a dead middlebox).
 * `seen` keeps each matched request's text, so a test can read its headers.
 */
export async function startDropProxy(
  upstream: string,
  drops: (requestText: string) => boolean,
  how: 'cut' | 'stall' = 'cut',
) {
  const target = new URL(upstream);
  const seen: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const server = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(server);
    let cutNextAnswer = false;
    client.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      if (drops(text)) {
        seen.push(text);
        cutNextAnswer = true;
      }
      server.write(chunk);
    });
    server.on('data', (chunk: Buffer) => {
      if (cutNextAnswer) {
        if (how === 'cut') {
          client.destroy();
          server.destroy();
        }
        return;
      }
      client.write(chunk);
    });
    const close = () => {
      client.destroy();
      server.destroy();
    };
    client.on('close', close).on('error', close);
    server.on('close', close).on('error', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The value of header `name` in a request's text, or undefined. */
export function headerIn(requestText: string, name: string): string | undefined {
  const line = requestText.split('\r\n').find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line?.slice(line.indexOf(':') + 1).trim();
}
