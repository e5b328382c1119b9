import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ConfigError, loadConfig } from './config.js';

describe('loadConfig', () => {
  test('applies the documented defaults to an empty environment', () => {
    const config = loadConfig({});
    expect(config.PORT).toBe(3000);
    expect(config.DATA_DIR).toBe('.data');
    expect(config.dataDir).toBe(path.resolve('.data'));
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.REDIS_PREFIX).toBe('lf');
    expect(config.LOCALNET_PORT).toBe(8899);
    expect(Object.isFrozen(config)).toBe(true);
  });

  test('a wrong value fails naming the variable, what it expected and what it got', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT: expected .*port.*\(got "eighty"\)/);
    expect(() => loadConfig({ PORT: '70000' })).toThrow(/PORT: expected an integer port from 1 to 65535/);
  });

  test('reports every wrong variable at once', () => {
    let message = '';
    try {
      loadConfig({ DATABASE_URL: 'mysql://x/y', REDIS_URL: 'localhost:6379', LOG_LEVEL: 'loud' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/DATABASE_URL: expected a URL starting with postgres:\/\/ or postgresql:\/\//);
    expect(message).toMatch(/REDIS_URL: expected a URL starting with redis:\/\//);
    expect(message).toMatch(/LOG_LEVEL: expected one of/);
  });

  test('an empty variable counts as unset', () => {
    expect(loadConfig({ DATABASE_URL: '', CLICKHOUSE_URL: '' }).DATABASE_URL).toBeUndefined();
  });

  test('REDIS_PREFIX refuses a colon, which BullMQ forbids in names', () => {
    expect(() => loadConfig({ REDIS_PREFIX: 'a:b' })).toThrow(/REDIS_PREFIX/);
  });
});
