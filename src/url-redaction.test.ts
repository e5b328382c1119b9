import { describe, expect, test } from 'vitest';
import { redactUrl, redactUrls } from './url-redaction.js';

describe('redactUrl', () => {
  test.each([
    ['https://mainnet.helius-rpc.com/?api-key=SECRET123', 'https://mainnet.helius-rpc.com/?api-key=***'],
    [
      'https://solana-mainnet.g.alchemy.com/v2/AbCdEf0123456789XyZaBcDeF01234567',
      'https://solana-mainnet.g.alchemy.com/v2/***',
    ],
    [
      'https://x.solana-mainnet.quiknode.pro/0a1b2c3d4e5f60718293a4b5c6d7e8f901234567/',
      'https://x.solana-mainnet.quiknode.pro/***/',
    ],
    [
      'postgres://ledgerfeed:hunter2@postgres:5432/ledgerfeed',
      'postgres://ledgerfeed:***@postgres:5432/ledgerfeed',
    ],
    ['https://rpctoken42@rpc.example.com', 'https://***@rpc.example.com'],
    [
      'https://rpc.example.com/?cluster=devnet&token=abc',
      'https://rpc.example.com/?cluster=devnet&token=***',
    ],
    // The password goes; a socket folder in ?host= is a place, not a secret.
    [
      'postgres://lf:pw@localhost:5432/lf?host=%2Ftmp%2Flf-pg&password=pw',
      'postgres://lf:***@localhost:5432/lf?host=%2Ftmp%2Flf-pg&password=***',
    ],
  ])('hides the secret of %s', (url, shown) => {
    expect(redactUrl(url)).toBe(shown);
  });

  test.each([
    'http://127.0.0.1:8899',
    'redis://127.0.0.1:6379',
    'https://api.devnet.solana.com',
    'not a url at all',
  ])('leaves %s as it is (nothing secret in it)', (url) => {
    expect(redactUrl(url)).toBe(url);
  });
});

describe('redactUrls', () => {
  test('redacts every URL inside a message and keeps the words around them', () => {
    expect(
      redactUrls('getHealth to https://rpc.example/?api-key=abc failed; retry "http://u:pw@h:1/x" later'),
    ).toBe('getHealth to https://rpc.example/?api-key=*** failed; retry "http://u:***@h:1/x" later');
  });
});
