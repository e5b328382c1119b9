import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, test } from 'vitest';
import { signatureHeader } from '../../../src/domain/webhooks/signature.js';

/**
 * The package as a consumer gets it: compiled by its own build (tsconfig.build.json) into a folder
 * of its own, then loaded by plain node, outside vitest and tsx and without the repository's
 * `paths` mapping to the source.
 */
const packageDir = fileURLToPath(new URL('..', import.meta.url));
// Inside the package, so node finds its dependencies as an installed package would (node_modules above).
const outDir = mkdtempSync(join(packageDir, '.probe-'));
afterAll(() => rmSync(outDir, { recursive: true, force: true }));

test('the built package loads in plain node, with its declarations, and works', () => {
  execFileSync(process.execPath, [require_tsc(), '-p', 'tsconfig.build.json', '--outDir', outDir], {
    cwd: packageDir,
    stdio: 'pipe',
  });
  const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as {
    types: string;
    main: string;
  };
  expect(readFileSync(join(outDir, manifest.types.replace('./dist/', '')), 'utf8')).toContain(
    'createLedgerfeedClient',
  );

  const body =
    '{"id":"evt_1","type":"post.liked","sequence":1,"created_at":"2026-11-28T00:00:00.000Z","data":{}}';
  const header = signatureHeader(['whsec_pkg'], Math.floor(Date.now() / 1000), body);
  const probe = join(outDir, 'probe.mjs');
  writeFileSync(
    probe,
    `import * as client from ${JSON.stringify(join(outDir, manifest.main.replace('./dist/', '')))};
     const made = client.createLedgerfeedClient({ baseUrl: 'http://127.0.0.1:1' });
     const event = client.verifyWebhook('whsec_pkg', { 'ledgerfeed-signature': ${JSON.stringify(header)} }, ${JSON.stringify(body)});
     console.log(JSON.stringify({ exports: Object.keys(client).sort(), rest: typeof made.rest.GET, event: event.id }));`,
  );
  const printed = JSON.parse(
    execFileSync(process.execPath, [probe], { cwd: packageDir, encoding: 'utf8' }),
  ) as {
    exports: string[];
    rest: string;
    event: string;
  };
  expect(printed).toEqual({
    exports: [
      'DEFAULT_WEBHOOK_TOLERANCE_SEC',
      'LedgerfeedError',
      'createLedgerfeedClient',
      'graphql',
      'readFragment',
      'verifyWebhook',
    ],
    rest: 'function',
    event: 'evt_1',
  });
}, 60_000);

/** The TypeScript compiler's CLI script, run by this node. */
function require_tsc(): string {
  return fileURLToPath(import.meta.resolve('typescript/bin/tsc'));
}
