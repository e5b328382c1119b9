import { describe, expect, test } from 'vitest';
import { publicRpcUrlOf } from './public-rpc-url.js';

describe('the public RPC URL of the dashboards', () => {
  test('defaults to the RPC URL without its secrets; a set PUBLIC_RPC_URL is used as given', () => {
    expect(publicRpcUrlOf(undefined, 'http://127.0.0.1:8899')).toBe('http://127.0.0.1:8899');
    expect(
      publicRpcUrlOf(undefined, 'https://mainnet.example-rpc.com/?api-key=0123456789abcdef'),
    ).not.toContain('0123456789abcdef');
    expect(publicRpcUrlOf('https://rpc.example.com/', 'https://x.example.com/?api-key=k1')).toBe(
      'https://rpc.example.com/',
    );
  });
});
