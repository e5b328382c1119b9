import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * The Chromium the browser tests drive with playwright-core, which never downloads one:
 * Debian's `/usr/bin/chromium` when it is there (CI installs it: the full browser, kept current by
 * apt), else the headless shell shipped inside the `@sparticuz/chromium` npm package, so
 * `npm ci && npm test` needs no apt package for it. `LEDGERFEED_TEST_CHROMIUM=bundled` forces the package's binary,
 * `=system` Debian's (and fails without it); unset or `auto` chooses as above.
 */
export interface TestChromium {
  source: 'system' | 'bundled';
  executablePath: string;
  args: string[];
  /** The environment to start it with; undefined: the test process's own. */
  env: Record<string, string> | undefined;
}

const SYSTEM = '/usr/bin/chromium';

/**
 * As root on a closed network: no sandbox, and none of Chromium's own calls home (without the
 * background-networking flags it tries Google's hosts at every start and is refused).
 */
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export async function testChromium(): Promise<TestChromium> {
  const choice = process.env.LEDGERFEED_TEST_CHROMIUM || 'auto';
  if (choice !== 'auto' && choice !== 'system' && choice !== 'bundled')
    throw new Error(`LEDGERFEED_TEST_CHROMIUM=${choice}: expected auto, system or bundled`);
  if (choice === 'system' || (choice === 'auto' && existsSync(SYSTEM))) {
    if (!existsSync(SYSTEM)) throw new Error(`LEDGERFEED_TEST_CHROMIUM=system but there is no ${SYSTEM}`);
    return { source: 'system', executablePath: SYSTEM, args: ARGS, env: undefined };
  }
  return bundledChromium();
}

/**
 * The package's binary, unpacked once per package version and user into the temp folder (2.3 s
 * here, 211 MB). The package itself would unpack into `os.tmpdir()` directly (/tmp/chromium, kept
 * whatever version wrote it, and half-written if a run is stopped): here it unpacks into a fresh
 * folder that is renamed into place only when complete. Its Amazon Linux copies of NSS/NSPR/expat and its fonts are unpacked too and
 * used only where the machine has none of its own.
 */
async function bundledChromium(): Promise<TestChromium> {
  const bin = path.join(
    path.dirname(createRequire(import.meta.url).resolve('@sparticuz/chromium')),
    '..',
    'bin',
  );
  const { version } = JSON.parse(readFileSync(path.join(bin, '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  const dir = path.join(tmpdir(), `ledgerfeed-chromium-${version}-${process.getuid?.() ?? 0}`);
  const executablePath = path.join(dir, 'chromium');
  if (!existsSync(executablePath)) await unpack(bin, dir);
  if (statSync(dir).uid !== (process.getuid?.() ?? 0)) throw new Error(`${dir} is not this user's`);

  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
  if (/not found/.test(execFileSync('ldd', [executablePath], { encoding: 'utf8' })))
    env.LD_LIBRARY_PATH = [path.join(dir, 'al2023', 'lib'), env.LD_LIBRARY_PATH].filter(Boolean).join(':');
  if (!existsSync('/etc/fonts/fonts.conf')) env.FONTCONFIG_FILE = path.join(dir, 'fonts.conf');
  // Under the C locale (LANG=C.UTF-8 here) this build says navigator.language is "en-US@posix",
  // which Intl refuses (uPlot's number format throws on it); Debian's says "en-US". A person's
  // browser has a language: give it the usual one (no glibc locale needed, it reads the name).
  if (!/^[a-z]{2,3}_[A-Z]{2}/.test(env.LC_ALL || env.LC_MESSAGES || env.LANG || '')) {
    delete env.LC_ALL;
    delete env.LC_MESSAGES;
    env.LANG = 'en_US.UTF-8';
  }
  return { source: 'bundled', executablePath, args: ARGS, env };
}

async function unpack(bin: string, dir: string): Promise<void> {
  const { default: chromium, inflate } = await import('@sparticuz/chromium');
  const staging = mkdtempSync(`${dir}.partial-`);
  try {
    // The package unpacks into os.tmpdir(), which it reads before its first await.
    const tmp = process.env.TMPDIR;
    process.env.TMPDIR = staging;
    let unpacked: Promise<unknown>;
    try {
      unpacked = Promise.all([chromium.executablePath(bin), inflate(path.join(bin, 'al2023.tar.br'))]);
    } finally {
      if (tmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = tmp;
    }
    await unpacked;
    // The package's own fonts.conf names /tmp/fonts; this one names where they are.
    writeFileSync(
      path.join(staging, 'fonts.conf'),
      `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n` +
        `  <dir>${dir}/fonts/fonts</dir>\n  <cachedir>${dir}/fonts-cache</cachedir>\n</fontconfig>\n`,
    );
    renameSync(staging, dir);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    // Another process unpacked the same version first.
    if (existsSync(path.join(dir, 'chromium'))) return;
    throw error;
  }
}
