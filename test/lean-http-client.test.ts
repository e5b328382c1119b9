import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createLeanClient } from '../bench/lean-http-client.js';

/**
 * The benches' writer client against node:http's server: the requests it sends are the ones
 * node:http's client would send, and it reads every answer the server gives (Content-Length,
 * chunked, a closing connection), so the writer's tallies stay true.
 */
let server: http.Server;
let base: string;
const seen: Array<{ method?: string; url?: string; headers: http.IncomingHttpHeaders; body: string }> = [];
let sockets = 0;

beforeAll(async () => {
  server = http.createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      seen.push({ method: request.method, url: request.url, headers: request.headers, body });
      if (request.url === '/chunked') {
        response.writeHead(202, { 'content-type': 'application/json' });
        response.write('{"part":');
        response.end('"two"}');
      } else if (request.url === '/close') {
        response.writeHead(200, { connection: 'close', 'content-length': 2 });
        response.end('{}');
      } else if (request.url === '/never') {
        // no answer
      } else {
        const text = JSON.stringify({ echo: body, é: 'ü' });
        response.writeHead(201, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(text),
        });
        response.end(text);
      }
    });
  });
  server.on('connection', () => sockets++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

test('sends the method, path, headers and body, and reads status and body (UTF-8, Content-Length)', async () => {
  const client = createLeanClient({ maxSockets: 4, timeoutMs: 5_000 });
  const answer = await client.post(`${base}/api/v1/posts?x=1`, '{"content":"héllo"}', {
    authorization: 'Bearer k',
  });
  client.close();
  expect(answer.status).toBe(201);
  expect(JSON.parse(answer.text)).toEqual({ echo: '{"content":"héllo"}', é: 'ü' });
  const request = seen.at(-1)!;
  expect(request.method).toBe('POST');
  expect(request.url).toBe('/api/v1/posts?x=1');
  expect(request.headers.authorization).toBe('Bearer k');
  expect(request.headers['content-type']).toBe('application/json');
  expect(request.headers['content-length']).toBe(String(Buffer.byteLength('{"content":"héllo"}')));
});

test('keeps connections alive, at most maxSockets of them, queueing the rest', async () => {
  const client = createLeanClient({ maxSockets: 3, timeoutMs: 5_000 });
  const before = sockets;
  const answers = await Promise.all(
    Array.from({ length: 30 }, (_, i) => client.post(`${base}/n${i}`, `${i}`, {})),
  );
  expect(answers.map((a) => (JSON.parse(a.text) as { echo: string }).echo)).toEqual(
    Array.from({ length: 30 }, (_, i) => `${i}`),
  );
  expect(sockets - before).toBe(3);
  await client.post(`${base}/again`, '1', {});
  expect(sockets - before).toBe(3);
  client.close();
});

test('reads a chunked answer and goes on after a server closes its connection', async () => {
  const client = createLeanClient({ maxSockets: 1, timeoutMs: 5_000 });
  expect(await client.post(`${base}/chunked`, '{}', {})).toEqual({ status: 202, text: '{"part":"two"}' });
  expect(await client.post(`${base}/close`, '{}', {})).toEqual({ status: 200, text: '{}' });
  expect((await client.post(`${base}/after`, '{}', {})).status).toBe(201);
  client.close();
});

test('a request with no answer fails at its timeout, and one queued behind it past its own is never sent', async () => {
  const client = createLeanClient({ maxSockets: 1, timeoutMs: 200 });
  const count = seen.length;
  const outcomes = await Promise.allSettled([
    client.post(`${base}/never`, '{}', {}),
    client.post(`${base}/queued`, '{}', {}),
  ]);
  client.close();
  expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(seen.slice(count).map((r) => r.url)).toEqual(['/never']);
});
