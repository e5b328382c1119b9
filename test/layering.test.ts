import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, test } from 'vitest';

/**
 * The layers of DESIGN.md, held by a test rather than by review: `domain` imports nothing of ours
 * outside `domain`; adapters import no use case or transport; the app layer imports no transport;
 * REST and GraphQL do not import each other (what both show lives in `src/api/`, beside them) and
 * import no adapter; the app layer does not import the devstack (the composition root receives
 * plain URLs: src/app/service-endpoints.ts); and no adapter imports another adapter (one that
 * needs another's storage takes a store interface, e.g. PlatformWalletStore).
 * Every relative import of every source file (static, re-export, dynamic) is checked. And the
 * wiring stays in one place: only src/app/wiring.ts (and its core section, wiring-core.ts) opens
 * clients and builds the shared stores.
 */
type Layer = 'domain' | 'adapters' | 'app' | 'rest' | 'graphql' | 'api' | 'workers' | 'devstack' | 'other';

const LAYER_OF_FOLDER: ReadonlyArray<[string, Layer]> = [
  ['src/domain/', 'domain'],
  ['src/adapters/', 'adapters'],
  ['src/app/', 'app'],
  ['src/api/rest/', 'rest'],
  ['src/api/graphql/', 'graphql'],
  ['src/api/', 'api'],
  ['workers/', 'workers'],
  ['src/devstack/', 'devstack'],
];

/** What each layer may not import. A layer not named here (cli, devstack, main) may import anything. */
const FORBIDDEN: Partial<Record<Layer, (target: Layer) => boolean>> = {
  domain: (target) => target !== 'domain',
  adapters: (target) => ['app', 'api', 'rest', 'graphql', 'workers', 'devstack'].includes(target),
  app: (target) => ['api', 'rest', 'graphql', 'workers', 'devstack'].includes(target),
  // A route or resolver maps its wire format to a use case and back: storage is the app's business.
  rest: (target) => target === 'graphql' || target === 'adapters',
  graphql: (target) => target === 'rest' || target === 'adapters',
};

function layerOf(file: string): Layer {
  return LAYER_OF_FOLDER.find(([folder]) => file.startsWith(folder))?.[1] ?? 'other';
}

interface Import {
  from: string;
  to: string;
}

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'))
    .map((file) => path.posix.join(folder, file.split(path.sep).join('/')));
}

/** Relative imports of one file, as repository paths. */
function importsOf(file: string, text: string): Import[] {
  const { importedFiles } = ts.preProcessFile(text, true, true);
  return importedFiles
    .map((imported) => imported.fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => ({
      from: file,
      to: path.posix.normalize(path.posix.join(path.posix.dirname(file), name)),
    }));
}

/** `postgres` for src/adapters/postgres/x.ts; undefined outside src/adapters/. */
function adapterOf(file: string): string | undefined {
  return file.startsWith('src/adapters/') ? file.split('/')[2] : undefined;
}

function violations(imports: readonly Import[]): string[] {
  const crossLayer = imports
    .filter(({ from, to }) => FORBIDDEN[layerOf(from)]?.(layerOf(to)))
    .map(({ from, to }) => `${from} (${layerOf(from)}) imports ${to} (${layerOf(to)})`);
  const crossAdapter = imports
    .filter(({ from, to }) => adapterOf(from) && adapterOf(to) && adapterOf(from) !== adapterOf(to))
    .map(({ from, to }) => `${from} (adapter ${adapterOf(from)}) imports ${to} (adapter ${adapterOf(to)})`);
  return [...crossLayer, ...crossAdapter];
}

const allImports = ['src', 'workers'].flatMap((folder) =>
  sourceFiles(folder).flatMap((file) => importsOf(file, readFileSync(file, 'utf8'))),
);

/**
 * Storage in the use cases: a Kysely import, a SQL template or a query builder call. SQL lives in
 * src/adapters/postgres/ repositories; a use case may hold an opaque `Tx` from there, nothing more.
 */
function storageIn(file: string, text: string): string[] {
  const { importedFiles } = ts.preProcessFile(text, true, true);
  const found = importedFiles
    .filter((imported) => imported.fileName === 'kysely' || imported.fileName.startsWith('kysely/'))
    .map(() => `${file} imports kysely`);
  for (const [pattern, what] of [
    [/\bsql`/, 'a SQL template'],
    [/\.(selectFrom|insertInto|updateTable|deleteFrom|replaceInto|mergeInto)\(/, 'a query builder call'],
    [/\.transaction\(\)/, 'a Kysely transaction'],
  ] as const) {
    if (pattern.test(text)) found.push(`${file} holds ${what}`);
  }
  return found;
}

/**
 * Telling others of a committed write: the read caches (`.changed(` on the change signals) or the
 * GraphQL subscribers (`liveEvents.publish(`). src/app/commit-notifier.ts alone does it, so one
 * table says what each write tells whom. The other files allowed to, and why:
 */
const TELLERS: Readonly<Record<string, string>> = {
  'src/app/commit-notifier.ts': 'the notifier',
  'src/app/change-signals.ts': 'carries the change keys to other processes over Redis',
  'src/app/events/account-events.ts':
    'wakes the event log’s own readers early (its topic is read nowhere else; the log is what the write committed)',
  'src/adapters/redis/payments-queue.ts':
    'hands the worker’s payment outcome to the request waiting on it (nothing a reader is shown)',
};

function tellingIn(file: string, text: string): string[] {
  const found: string[] = [];
  for (const [pattern, what] of [
    [/\.changed\(/, 'tells the read caches of a change'],
    [/liveEvents\s*\??\.\s*publish\(/, 'publishes a live event'],
  ] as const) {
    if (pattern.test(text)) found.push(`${file} ${what}`);
  }
  return found;
}

/**
 * The factories of the clients and process-wide stores (a pool, a Redis or ClickHouse client, the
 * RPC client, the keystore, the stores the API decorates with caches and change signals). Called
 * outside the wiring, they make a second pool or a store that skips its decorators (a change no
 * read cache hears of). A definition (`function createMetrics(`) is not a call.
 */
const WIRING_CALL =
  /(?<!function\s+)\b(createDb|createPool|createRedis|createClickHouse|unconfiguredClickHouse|createRpcClient|createSignatureWatcher|createKeystore|createLiveEvents|createChangeSignals|createPaymentsQueue|createRateLimiter|createMetrics|createAccountStore|createApiKeyStore|createFollowStore|createLedgerStore|createKeyUseNotes|createWalletProvisioner)\(/g;

/**
 * Where those calls may be: the wiring, the adapters that define them (one composes another's
 * client, e.g. the payments queue's Redis connection), and the entry points that hold only part of
 * a process: the CLI's contexts and the workers' threads and roles (tests and bench are not
 * scanned).
 */
function mayWire(file: string): boolean {
  return (
    file === 'src/app/wiring.ts' ||
    file === 'src/app/wiring-core.ts' ||
    file.startsWith('src/adapters/') ||
    file.startsWith('src/cli/') ||
    /^workers\/[^/]+\.(thread|role)\.ts$/.test(file)
  );
}

function wiringOutside(file: string, text: string): string[] {
  if (mayWire(file)) return [];
  return [...text.matchAll(WIRING_CALL)].map((match) => `${file} calls ${match[1]}(`);
}

/** The modules a file loads when it runs: relative imports and packages, type-only ones left out. */
function runtimeImportsOf(file: string, text: string): { files: string[]; packages: string[] } {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest);
  const files: string[] = [];
  const packages: string[] = [];
  for (const statement of source.statements) {
    let specifier: ts.Expression | undefined;
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause;
      const bindings = clause?.namedBindings;
      const typesOnly =
        clause?.isTypeOnly ||
        (clause && !clause.name && bindings && ts.isNamedImports(bindings)
          ? bindings.elements.every((element) => element.isTypeOnly)
          : false);
      if (!typesOnly) specifier = statement.moduleSpecifier;
    } else if (ts.isExportDeclaration(statement) && !statement.isTypeOnly) {
      specifier = statement.moduleSpecifier;
    }
    if (!specifier || !ts.isStringLiteral(specifier)) continue;
    const name = specifier.text;
    if (!name.startsWith('.')) packages.push(name);
    else
      files.push(
        path.posix.normalize(path.posix.join(path.posix.dirname(file), name)).replace(/\.js$/, '.ts'),
      );
  }
  return { files, packages };
}

/** Every package `entry` loads, through any chain of runtime imports of our files. */
function packagesLoadedBy(entry: string): Set<string> {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const pending = [entry];
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    const imports = runtimeImportsOf(file, readFileSync(file, 'utf8'));
    for (const name of imports.packages) packages.add(name);
    pending.push(...imports.files.filter((imported) => !seen.has(imported)));
  }
  return packages;
}

describe('layering', () => {
  test('a payments thread loads no ClickHouse: chdb in a second thread aborts the main one', () => {
    // workers/payments.thread.ts takes its core from src/app/wiring-core.ts, not wiring.ts, for this.
    const loaded = [...packagesLoadedBy('workers/payments.thread.ts')];
    expect(loaded).toContain('bullmq');
    expect(loaded.filter((name) => name.startsWith('chdb') || name.startsWith('@clickhouse/'))).toEqual([]);
    // The walk sees a runtime import through our files, and leaves type-only ones out.
    expect([...packagesLoadedBy('src/app/wiring.ts')]).toContain('chdb/connection');
    expect(
      runtimeImportsOf('x.ts', "import type { A } from './a.js';\nimport { type B } from './b.js';").files,
    ).toEqual([]);
  });

  test('clients and shared stores are built only by the wiring (src/app/wiring*.ts) and entry points', () => {
    const files = ['src', 'workers'].flatMap((folder) => sourceFiles(folder));
    expect(files.flatMap((file) => wiringOutside(file, readFileSync(file, 'utf8')))).toEqual([]);
    // The wiring does make the calls the pattern looks for: the rule is not vacuous.
    const wired = new Set(
      ['src/app/wiring.ts', 'src/app/wiring-core.ts'].flatMap((file) =>
        [...readFileSync(file, 'utf8').matchAll(WIRING_CALL)].map((match) => match[1]),
      ),
    );
    for (const factory of [
      'createDb',
      'createRedis',
      'createClickHouse',
      'createRpcClient',
      'createKeystore',
    ]) {
      expect(wired, factory).toContain(factory);
    }
    // The check sees a client or store made anywhere else in src/app, src/api or a worker module.
    expect(wiringOutside('src/app/feed/x.ts', 'const db = createDb(url, { max: 2 });')).toEqual([
      'src/app/feed/x.ts calls createDb(',
    ]);
    expect(wiringOutside('src/api/rest/y.ts', "const r = createRedis(url, 'client');")).toEqual([
      'src/api/rest/y.ts calls createRedis(',
    ]);
    expect(wiringOutside('workers/processors.ts', 'const s = createAccountStore(app.db);')).toEqual([
      'workers/processors.ts calls createAccountStore(',
    ]);
    expect(wiringOutside('src/app/z.ts', 'export function createChangeSignals(events) {')).toEqual([]);
    expect(wiringOutside('src/app/wiring.ts', 'const db = createDb(url);')).toEqual([]);
    expect(wiringOutside('workers/payments.thread.ts', 'const db = createDb(url);')).toEqual([]);
  });

  test('no use case under src/app holds SQL or imports Kysely', () => {
    const files = sourceFiles('src/app');
    expect(files.length).toBeGreaterThan(20);
    expect(files.flatMap((file) => storageIn(file, readFileSync(file, 'utf8')))).toEqual([]);
    // The check sees each form.
    expect(storageIn('src/app/x.ts', "import { sql } from 'kysely';")).toEqual([
      'src/app/x.ts imports kysely',
    ]);
    expect(storageIn('src/app/x.ts', 'await sql`SELECT 1`.execute(db);')).toEqual([
      'src/app/x.ts holds a SQL template',
    ]);
    expect(storageIn('src/app/x.ts', "db.selectFrom('posts').selectAll()")).toEqual([
      'src/app/x.ts holds a query builder call',
    ]);
    expect(storageIn('src/app/x.ts', 'db.transaction().execute(work)')).toEqual([
      'src/app/x.ts holds a Kysely transaction',
    ]);
    expect(storageIn('src/app/x.ts', "import type { Tx } from '../adapters/postgres/tx.js';")).toEqual([]);
  });

  test('only the commit notifier tells the read caches or subscribers of a committed write', () => {
    const files = ['src', 'workers'].flatMap(sourceFiles).filter((file) => !(file in TELLERS));
    expect(files.length).toBeGreaterThan(100);
    expect(files.flatMap((file) => tellingIn(file, readFileSync(file, 'utf8')))).toEqual([]);
    // The check sees each form, and the notifier's own calls.
    expect(tellingIn('src/app/x.ts', 'deps.changes.changed(postKey(id));')).toEqual([
      'src/app/x.ts tells the read caches of a change',
    ]);
    expect(tellingIn('workers/y.ts', "void app.liveEvents\n  .publish('post-created', { postId });")).toEqual(
      ['workers/y.ts publishes a live event'],
    );
    expect(tellingIn('src/app/x.ts', 'if (state.changed) return; const changed = [];')).toEqual([]);
    const notifier = 'src/app/commit-notifier.ts';
    expect(tellingIn(notifier, readFileSync(notifier, 'utf8'))).toHaveLength(2);
    for (const file of Object.keys(TELLERS))
      expect(tellingIn(file, readFileSync(file, 'utf8')), file).not.toEqual([]);
  });

  test('no file imports across a forbidden layer boundary', () => {
    expect(violations(allImports)).toEqual([]);
  });

  test('the check sees every layer and every kind of import', () => {
    const seen = new Set(allImports.map((imported) => layerOf(imported.from)));
    for (const layer of ['domain', 'adapters', 'app', 'rest', 'graphql', 'api', 'workers'] as const) {
      expect(seen, layer).toContain(layer);
    }
    // Every form of import is caught: static, type-only, re-export, dynamic; packages are not ours.
    const text = [
      "import { a } from '../../app/a.js';",
      "import type { B } from '../../api/b.js';",
      "export { c } from '../../api/rest/c.js';",
      "const d = await import('../../api/graphql/d.js');",
      "import { e } from '../../domain/e.js';",
      "import { Kysely } from 'kysely';",
    ].join('\n');
    expect(violations(importsOf('src/adapters/postgres/x.ts', text))).toEqual([
      'src/adapters/postgres/x.ts (adapters) imports src/app/a.js (app)',
      'src/adapters/postgres/x.ts (adapters) imports src/api/b.js (api)',
      'src/adapters/postgres/x.ts (adapters) imports src/api/rest/c.js (rest)',
      'src/adapters/postgres/x.ts (adapters) imports src/api/graphql/d.js (graphql)',
    ]);
    expect(violations(importsOf('src/api/graphql/y.ts', "import { f } from '../rest/f.js';"))).toHaveLength(
      1,
    );
    const storage = "import type { Db } from '../../adapters/postgres/db.js';";
    expect(violations(importsOf('src/api/rest/r.ts', storage))).toHaveLength(1);
    expect(violations(importsOf('src/api/graphql/q.ts', storage))).toHaveLength(1);
    expect(violations(importsOf('src/domain/z.ts', "import { g } from '../config/g.js';"))).toHaveLength(1);
    expect(violations(importsOf('src/app/w.ts', "import type { D } from '../devstack/index.js';"))).toEqual([
      'src/app/w.ts (app) imports src/devstack/index.js (devstack)',
    ]);
    // Within one adapter is fine; into another is not.
    expect(violations(importsOf('src/adapters/solana/s.ts', "import { h } from './h.js';"))).toEqual([]);
    expect(
      violations(importsOf('src/adapters/solana/s.ts', storage.replace('../../adapters/', '../'))),
    ).toEqual([
      'src/adapters/solana/s.ts (adapter solana) imports src/adapters/postgres/db.js (adapter postgres)',
    ]);
  });
});
