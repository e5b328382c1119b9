import { connect, type Socket } from 'node:net';

/*
 * A raw HTTP/1.1 client for the receive limits' tests: a request sent a byte at a time, and the
 * first answer read off the wire.
 */

/** What came back on one connection, and when (ms after it opened) it came and the server closed it. */
export interface Outcome {
  status: number;
  body: unknown;
  answeredAfterMs: number;
  closedAfterMs: number;
}

/** Parses the first HTTP answer in `text` (a Content-Length body, as every answer here has). */
export function firstAnswer(text: string): { status: number; body: unknown; rest: string } {
  const headEnd = text.indexOf('\r\n\r\n');
  if (headEnd < 0) return { status: 0, body: text, rest: '' };
  const head = text.slice(0, headEnd);
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
  const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
  const raw = text.slice(headEnd + 4, headEnd + 4 + length);
  let body: unknown = raw;
  try {
    body = JSON.parse(raw);
  } catch {
    // not JSON: the assertion shows the text
  }
  return { status, body, rest: text.slice(headEnd + 4 + length) };
}

/**
 * Sends `head` to 127.0.0.1:`port` at once, then `drip` one byte every `everyMs` until the server
 * closes the connection (or everything was sent and the server answered).
 */
export function dripping(port: number, head: string, drip: string, everyMs: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const opened = performance.now();
    const socket: Socket = connect(port, '127.0.0.1');
    let received = '';
    let answeredAfterMs = 0;
    let sent = 0;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      answeredAfterMs ||= performance.now() - opened;
      received += chunk;
    });
    socket.on('error', () => {}); // a write after the server closed: 'close' follows
    socket.write(head);
    const timer = setInterval(() => {
      if (sent < drip.length) socket.write(drip[sent++]!);
    }, everyMs);
    socket.on('close', () => {
      clearInterval(timer);
      const { status, body } = firstAnswer(received);
      resolve({ status, body, answeredAfterMs, closedAfterMs: performance.now() - opened });
    });
  });
}
