import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { writeFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';

/**
 * A worker thread running the module `name` (no extension) beside the module at `baseUrl` (its
 * `import.meta.url`). After a build the module is plain JS. Under tsx (npm start, the tests) it is
 * TypeScript and threads do not inherit tsx's loader, so a two-line bootstrap registers it there
 * first.
 */
export function spawnModuleThread(baseUrl: string, name: string, workerData: unknown): Worker {
  if (!baseUrl.endsWith('.ts')) return new Worker(new URL(`./${name}.js`, baseUrl), { workerData });
  const tsx = tsxEsmApi();
  const entry = new URL(`./${name}.ts`, baseUrl).href;
  const bootstrap =
    `import(${JSON.stringify(tsx)}).then((api) => { (api.register ?? api.default.register)(); ` +
    `return import(${JSON.stringify(entry)}); });`;
  return new Worker(bootstrap, { eval: true, workerData });
}

/**
 * The ESM entry of `tsx/esm/api`, from tsx's own exports map. Not import.meta.resolve (vitest's
 * module runner lacks it) and not require.resolve (that picks the CommonJS build, whose loader
 * registration breaks inside a worker).
 */
function tsxEsmApi(): string {
  const require = createRequire(import.meta.url);
  const manifestPath = require.resolve('tsx/package.json');
  const manifest = require(manifestPath) as { exports: Record<string, { import: { default: string } }> };
  const entry = manifest.exports['./esm/api']?.import.default;
  if (!entry) throw new Error('tsx/esm/api has no ESM entry');
  return pathToFileURL(path.join(path.dirname(manifestPath), entry)).href;
}

/**
 * Names the calling thread for the kernel (Linux; at most 15 bytes, cut beyond): `top -H`, `perf`
 * and the benches' per-thread CPU (bench/thread-cpu.ts) then tell the payments and localnet threads
 * apart, which all show as `node` otherwise. A synchronous write runs on the calling thread, so
 * /proc/thread-self is this thread. Best effort: elsewhere it does nothing.
 */
export function nameThisThread(name: string): void {
  try {
    writeFileSync('/proc/thread-self/comm', name.slice(0, 15));
  } catch {
    // not Linux, or /proc not mounted: the thread keeps its name
  }
}
