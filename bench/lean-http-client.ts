/**
 * A lean HTTP/1.1 client for the benches' writers: kept-alive sockets, one request in flight per
 * socket, a request written in one syscall and its answer read by hand (status line, Content-Length
 * or chunked body). It sends the very requests node:http would (method, path, headers, body); what
 * it saves is the writer's own CPU. On these 2-core machines the writer shares the cores with the
 * service it loads: node:http cost it 0.5-0.8 ms of CPU per request (0.2-0.3 cores at 400
 * writes/s), which the benchmark then counted against the service's reads. autocannon, the readers'
 * client, works the same way.
 */
import net from 'node:net';

export interface LeanAnswer {
  status: number;
  text: string;
}

export interface LeanClient {
  /** POSTs `body` (JSON) to `url` on one of the client's sockets; rejects after `timeoutMs`. */
  post(url: string, body: string, headers: Record<string, string>): Promise<LeanAnswer>;
  /** Closes every socket (call once nothing is in flight). */
  close(): void;
}

interface Exchange {
  request: Buffer;
  /** Answered, failed or timed out: a queued one that is settled is never sent. */
  settled: boolean;
  resolve(answer: LeanAnswer): void;
  reject(error: Error): void;
  timer?: NodeJS.Timeout;
}

/** One kept-alive connection: exchanges one request at a time. */
class Connection {
  private readonly socket: net.Socket;
  private buffered: Buffer = Buffer.alloc(0);
  private current: Exchange | undefined;
  closed = false;

  constructor(
    host: string,
    port: number,
    private readonly onIdle: (connection: Connection) => void,
  ) {
    this.socket = net.connect({ host, port, noDelay: true });
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk));
    const end = (error?: Error) => this.fail(error ?? new Error('connection closed by the server'));
    this.socket.on('error', end);
    this.socket.on('close', () => end());
  }

  exchange(exchange: Exchange): void {
    this.current = exchange;
    this.socket.write(exchange.request);
  }

  close(): void {
    this.closed = true;
    this.socket.destroy();
  }

  private fail(error: Error): void {
    this.closed = true;
    const current = this.current;
    this.current = undefined;
    if (current) current.reject(error);
  }

  private onData(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    const parsed = parseAnswer(this.buffered);
    if (!parsed) return;
    if (parsed === 'invalid') {
      this.fail(new Error('unparsable HTTP answer'));
      this.socket.destroy();
      return;
    }
    this.buffered = this.buffered.subarray(parsed.length);
    const current = this.current;
    this.current = undefined;
    if (parsed.close) this.close();
    if (current) current.resolve({ status: parsed.status, text: parsed.text });
    if (!this.closed) this.onIdle(this);
  }
}

/**
 * One answer at the start of `data`, if all of it has arrived: its status, body text, how many
 * bytes it took and whether the server closes the connection after it.
 */
function parseAnswer(
  data: Buffer,
): { status: number; text: string; length: number; close: boolean } | 'invalid' | undefined {
  const headEnd = data.indexOf('\r\n\r\n');
  if (headEnd < 0) return undefined;
  const head = data.toString('latin1', 0, headEnd);
  const lines = head.split('\r\n');
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '');
  if (!status) return 'invalid';
  let contentLength: number | undefined;
  let chunked = false;
  let close = false;
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line
      .slice(colon + 1)
      .trim()
      .toLowerCase();
    if (name === 'content-length') contentLength = Number(value);
    else if (name === 'transfer-encoding') chunked = value.includes('chunked');
    else if (name === 'connection') close = value === 'close';
  }
  const bodyStart = headEnd + 4;
  if (chunked) {
    const parts: Buffer[] = [];
    let at = bodyStart;
    for (;;) {
      const sizeEnd = data.indexOf('\r\n', at);
      if (sizeEnd < 0) return undefined;
      const size = parseInt(data.toString('latin1', at, sizeEnd), 16);
      if (!Number.isFinite(size)) return 'invalid';
      const chunkStart = sizeEnd + 2;
      if (data.length < chunkStart + size + 2) return undefined;
      if (size === 0) {
        return {
          status: Number(status[1]),
          text: Buffer.concat(parts).toString('utf8'),
          length: chunkStart + 2,
          close,
        };
      }
      parts.push(data.subarray(chunkStart, chunkStart + size));
      at = chunkStart + size + 2;
    }
  }
  const length = contentLength ?? 0;
  if (!Number.isFinite(length) || length < 0) return 'invalid';
  if (data.length < bodyStart + length) return undefined;
  return {
    status: Number(status[1]),
    text: data.toString('utf8', bodyStart, bodyStart + length),
    length: bodyStart + length,
    close,
  };
}

/**
 * A client of at most `maxSockets` kept-alive connections; requests beyond them wait in the
 * client (their wait counts in their latency, as with node:http's Agent).
 */
export function createLeanClient(options: { maxSockets: number; timeoutMs: number }): LeanClient {
  const idle: Connection[] = [];
  const all = new Set<Connection>();
  const queue: Array<{ host: string; port: number; exchange: Exchange }> = [];

  const onIdle = (connection: Connection) => {
    let next = queue.shift();
    while (next?.exchange.settled) next = queue.shift();
    if (next) connection.exchange(next.exchange);
    else idle.push(connection);
  };

  const dispatch = (host: string, port: number, exchange: Exchange) => {
    let connection = idle.pop();
    while (connection && connection.closed) connection = idle.pop();
    if (!connection) {
      for (const c of all) if (c.closed) all.delete(c);
      if (all.size >= options.maxSockets) {
        queue.push({ host, port, exchange });
        return;
      }
      connection = new Connection(host, port, onIdle);
      all.add(connection);
    }
    connection.exchange(exchange);
  };

  return {
    post: (url, body, headers) =>
      new Promise<LeanAnswer>((resolve, reject) => {
        const target = new URL(url);
        const lines = [
          `POST ${target.pathname}${target.search} HTTP/1.1`,
          `host: ${target.host}`,
          'connection: keep-alive',
          'content-type: application/json',
          `content-length: ${Buffer.byteLength(body)}`,
          ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
        ];
        const request = Buffer.from(`${lines.join('\r\n')}\r\n\r\n${body}`);
        const exchange: Exchange = {
          request,
          settled: false,
          resolve: (answer) => {
            exchange.settled = true;
            clearTimeout(exchange.timer);
            resolve(answer);
          },
          reject: (error) => {
            exchange.settled = true;
            clearTimeout(exchange.timer);
            reject(error);
          },
        };
        exchange.timer = setTimeout(
          () => exchange.reject(new Error(`no answer within ${options.timeoutMs} ms`)),
          options.timeoutMs,
        );
        dispatch(target.hostname, Number(target.port || 80), exchange);
      }),
    close: () => {
      for (const connection of all) connection.close();
      all.clear();
      idle.length = 0;
    },
  };
}
