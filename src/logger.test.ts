import { describe, expect, test } from 'vitest';
import { loadConfig } from './config/index.js';
import { createLogger } from './logger.js';

describe('createLogger', () => {
  test('never writes the secret of a URL in a message or in a logged error', () => {
    const lines: string[] = [];
    const logger = createLogger(loadConfig({ LOG_LEVEL: 'info' }), { write: (line) => lines.push(line) });
    logger.info('RPC at https://mainnet.helius-rpc.com/?api-key=SECRET1');
    logger.error(
      { err: new Error('request to https://user:SECRET2@rpc.example/v2/SECRET3abcdefghijklmnop failed') },
      'sending failed',
    );
    const written = lines.join('');
    expect(written).toContain('https://mainnet.helius-rpc.com/?api-key=***');
    expect(written).toContain('https://user:***@rpc.example/v2/***');
    expect(written).not.toMatch(/SECRET/);
  });
});
