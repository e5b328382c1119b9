import { Keypair } from '@solana/web3.js';
import { describe, expect, test } from 'vitest';
import { loadConfig } from './config/index.js';
import type { RunningService } from './service.js';
import { startupSummary } from './startup-summary.js';

describe('startupSummary', () => {
  test('prints every backing URL without its secret', () => {
    const key = () => Keypair.generate();
    // Only what the summary reads: the stack's URLs, the platform's addresses, the roles.
    const service = {
      apiUrl: 'http://127.0.0.1:3000',
      roles: [{ name: 'api', summary: [] }],
      app: {
        config: loadConfig({}),
        stack: {
          postgres: { source: 'external', url: 'postgres://lf:PGSECRET@db:5432/lf' },
          redis: { source: 'external', url: 'redis://:REDISSECRET@cache:6379' },
          clickhouse: { kind: 'server', url: 'http://lf:CHSECRET@ch:8123' },
          solana: {
            source: 'external',
            url: 'https://mainnet.helius-rpc.com/?api-key=RPCSECRET',
            wsUrl: 'wss://mainnet.helius-rpc.com/?api-key=RPCSECRET',
          },
        },
      },
      platform: {
        cluster: 'mainnet-beta',
        usdcMint: key().publicKey,
        nativeMint: key().publicKey,
        nativeDecimals: 9,
        signers: { fee_payer: key(), treasury: key() },
      },
    } as unknown as RunningService;
    const printed = startupSummary(service);
    expect(printed).toContain('https://mainnet.helius-rpc.com/?api-key=***');
    expect(printed).toContain('postgres://lf:***@db:5432/lf');
    expect(printed).not.toMatch(/SECRET/);
  });
});
