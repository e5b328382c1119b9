import { buildApp } from 'fauxqs';

/**
 * An S3-compatible server for the tests (fauxqs, S3 alone used), in a process of its own so that
 * the objects it holds in memory do not count in the test's memory. Listens on 127.0.0.1, a free
 * port, which it prints as `{"port":N}`; stops when its stdin closes (the test ended or died).
 */
const app = buildApp({ logger: false });
const address = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`${JSON.stringify({ port: Number(new URL(address).port) })}\n`);
process.stdin.resume();
process.stdin.on('end', () => {
  void app.close().finally(() => process.exit(0));
});
