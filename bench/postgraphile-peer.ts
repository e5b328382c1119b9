import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { freePort } from '../src/devstack/free-port.js';
import { projectRoot } from '../src/project-root.js';
import { pollUntil } from './clock.js';
import { graphqlRequest } from './http-load.js';

/**
 * PostGraphile v4, the peer of `bench/read-peer.ts`, as its users run it: the CLI in a process of
 * its own, introspecting the service's Postgres schema `public`, with the simplify inflector (so
 * relations read `author`, `likes`, `childPosts`), no GraphiQL and no per-query console log (its
 * docs recommend that in production; logging every query would cost it CPU on every request).
 * Its pool has 10 connections, like the service's.
 */
export async function startPostGraphile(
  databaseUrl: string,
): Promise<{ url: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      // One graphql instance for all of PostGraphile (see postgraphile-realm.js).
      '--import',
      pathToFileURL(path.join(projectRoot(), 'bench', 'postgraphile-realm.js')).href,
      createRequire(import.meta.url).resolve('postgraphile/cli.js'),
      '--connection',
      databaseUrl,
      '--schema',
      'public',
      '--append-plugins',
      '@graphile-contrib/pg-simplify-inflector',
      '--disable-graphiql',
      '--disable-query-log',
      '--max-pool-size',
      '10',
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
    ],
    { cwd: projectRoot(), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const url = `http://127.0.0.1:${port}/graphql`;
  const stop = () => stopChild(child);
  try {
    await waitReady(child, url, () => output);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, stop };
}

/** Until PostGraphile answers a query (it introspects the schema first), at most 60 s. */
async function waitReady(child: ChildProcess, url: string, output: () => string): Promise<void> {
  const answers = async () => {
    if (child.exitCode !== null) throw new Error(`postgraphile exited ${child.exitCode}:\n${output()}`);
    const request = graphqlRequest('{ __typename }');
    return fetch(url, request).then(
      (response) => response.ok,
      () => false,
    ); // false: not listening yet
  };
  const { held } = await pollUntil(answers, (ok) => ok, { everyMs: 200, limitMs: 60_000 });
  if (!held) throw new Error(`postgraphile did not answer within 60 s:\n${output()}`);
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  child.kill('SIGTERM');
  const killed = await Promise.race([closed.then(() => true), sleep(5_000).then(() => false)]);
  if (!killed) {
    child.kill('SIGKILL');
    await closed;
  }
}
