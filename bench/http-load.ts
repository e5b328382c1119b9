import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from '../src/project-root.js';

/** Every read benchmark's client: 50 kept-alive connections, as in the issues' targets. */
export const CONNECTIONS = 50;

const run = promisify(execFile);

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface Load {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Connection errors and timeouts. */
  errors: number;
  non2xx: number;
  /** Requests answered during the run, and sent (the difference was still waiting at its end). */
  answered: number;
  sent: number;
}

/**
 * autocannon in its own process, JSON out: the load generator's CPU is not the measured server's
 * event loop (it still shares the machine's cores, so compare runs of one bench, not absolutes).
 */
export async function load(url: string, seconds: number, options: RequestOptions = {}): Promise<Load> {
  const args = ['-c', String(CONNECTIONS), '-d', String(seconds), '-j'];
  if (options.method) args.push('-m', options.method);
  for (const [name, value] of Object.entries(options.headers ?? {})) args.push('-H', `${name}=${value}`);
  if (options.body) args.push('-b', options.body);
  const { stdout } = await run(
    path.join(projectRoot(), 'node_modules', '.bin', 'autocannon'),
    [...args, url],
    {
      maxBuffer: 16 * 1024 * 1024,
    },
  );
  const result = JSON.parse(stdout) as {
    requests: { average: number; total: number; sent: number };
    latency: { p50: number; p99: number };
    errors: number;
    timeouts: number;
    non2xx: number;
  };
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    answered: result.requests.total,
    sent: result.requests.sent,
  };
}

/** One request as the load sends it: status and the exact bytes of the answer. */
export async function sample(
  url: string,
  options: RequestOptions = {},
): Promise<{ status: number; bytes: Buffer }> {
  const response = await fetch(url, {
    method: options.method ?? 'GET',
    headers: options.headers,
    ...(options.body ? { body: options.body } : {}),
  });
  return { status: response.status, bytes: Buffer.from(await response.arrayBuffer()) };
}

/** A plain node:http server answering `body` to every request: the ceiling of this machine. */
export async function plainServer(body: Buffer): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((_request, response) => {
    response.writeHead(200, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': body.length,
    });
    response.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A GraphQL query as a load sends it: POSTed as JSON, with `headers` (authorization) beside. */
export const graphqlRequest = (query: string, headers: Record<string, string> = {}): RequestOptions => ({
  method: 'POST',
  headers: { ...headers, 'content-type': 'application/json' },
  body: JSON.stringify({ query }),
});

/** A read's checks, held in a smoke run too: every request answered 2xx, and some were answered. */
export const allAnswered2xx = (result: Load): boolean =>
  result.errors + result.non2xx === 0 && result.answered > 0;

/** A URL and the request a load sends it. */
export interface Target {
  url: string;
  options: RequestOptions;
}

/** Loads each target for `seconds` in turn, not measured: the reads run hot before anything is. */
export async function warmUp(targets: readonly Target[], seconds: number): Promise<void> {
  if (seconds > 0) for (const target of targets) await load(target.url, seconds, target.options);
}

/**
 * The ceiling beside a route: its answer now (anything but 200 throws), a plain server answering
 * those very bytes, and that server's load for `seconds` with `plainOptions` sent. The caller
 * closes the server.
 */
export async function plainCeiling(
  name: string,
  route: Target,
  seconds: number,
  plainOptions: RequestOptions,
): Promise<{ bytes: Buffer; ceiling: Load; plain: Awaited<ReturnType<typeof plainServer>> }> {
  const { status, bytes } = await sample(route.url, route.options);
  if (status !== 200) throw new Error(`${name} answered ${status}: ${bytes.toString().slice(0, 500)}`);
  const plain = await plainServer(bytes);
  return { bytes, ceiling: await load(plain.url, seconds, plainOptions), plain };
}
