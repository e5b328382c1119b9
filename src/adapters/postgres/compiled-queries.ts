import type { Compilable, CompiledQuery } from 'kysely';
import type { Db } from './db.js';

/** Marks where a named value goes in a query built once; never reaches Postgres. */
class Slot {
  constructor(readonly name: string) {}
  /** A slot turned into SQL text (sql.raw, sql.ref, a template literal) would bind nothing. */
  toString(): never {
    throw new Error(`compiled query: parameter "${this.name}" must stay a bound value`);
  }
}

/** Where each of a compiled query's parameters comes from: a named value, or a constant of the build. */
type Binding = { name: string } | { constant: unknown };

/**
 * A Kysely query whose SQL is built and compiled once; every run binds new values to it and runs
 * it. Building and compiling a query is Kysely's own work, on every call: on a feed page read with
 * the read caches off it was about a tenth of the API's main thread (node:inspector profile under
 * `bench:read-peer`'s REST load; walking and freezing the operation tree, then printing the SQL),
 * and a new SQL string each time also made prepared-statements.ts hash its whole text again.
 *
 * `build` gets a stand-in for every named value and must pass each one to Kysely as a value (a
 * `where`, a `limit`, a `${}` of a `sql` template): it runs once, so it must not branch on a
 * value or compute with it. Each shape of a query (with a cursor, without) is its own compiled
 * query. A misuse fails at the first run, loudly. It runs on the `db` of the first call; the SQL
 * then serves every pool and transaction, as all of ours are Postgres without plugins.
 */
export function compiledQuery<P extends Record<string, unknown>, O>(
  build: (db: Db, params: P) => Compilable<O>,
): (db: Db, params: P) => Promise<O[]> {
  let compiled: { query: CompiledQuery<O>; bindings: Binding[] } | undefined;
  return async (db, params) => {
    compiled ??= compileWithSlots(db, build);
    const { query, bindings } = compiled;
    const parameters = bindings.map((binding) =>
      'name' in binding ? params[binding.name] : binding.constant,
    );
    return (await db.executeQuery<O>({ ...query, parameters })).rows;
  };
}

function compileWithSlots<P extends Record<string, unknown>, O>(
  db: Db,
  build: (db: Db, params: P) => Compilable<O>,
): { query: CompiledQuery<O>; bindings: Binding[] } {
  const used = new Set<string>();
  const slots = new Proxy({} as P, {
    get: (_target, name) => {
      if (typeof name !== 'string') return undefined;
      used.add(name);
      return new Slot(name);
    },
  });
  const query = build(db, slots).compile();
  const bindings = query.parameters.map((value): Binding =>
    value instanceof Slot ? { name: value.name } : { constant: value },
  );
  for (const name of used) {
    if (!bindings.some((binding) => 'name' in binding && binding.name === name)) {
      throw new Error(
        `compiled query: parameter "${name}" was read by the build but is not bound in its SQL`,
      );
    }
  }
  return { query, bindings };
}
