import { describe, expect, test } from 'vitest';
import { loadClickHouseMigrations, splitStatements } from './migrator.js';

describe('splitStatements', () => {
  test('splits on semicolons at line ends and drops comment lines', () => {
    const text = `-- a comment; with a semicolon\nCREATE TABLE a (x Int8) ENGINE = Memory;\n\nCREATE TABLE b (s String DEFAULT 'a;b') ENGINE = Memory;\n`;
    expect(splitStatements(text)).toEqual([
      'CREATE TABLE a (x Int8) ENGINE = Memory',
      "CREATE TABLE b (s String DEFAULT 'a;b') ENGINE = Memory",
    ]);
  });
});

describe('loadClickHouseMigrations', () => {
  test('finds the committed DDL files in name order, each with statements', () => {
    const migrations = loadClickHouseMigrations();
    expect(migrations.length).toBeGreaterThan(0);
    expect(migrations.map((m) => m.name)).toEqual([...migrations.map((m) => m.name)].sort());
    for (const m of migrations) expect(m.statements.length).toBeGreaterThan(0);
  });
});
