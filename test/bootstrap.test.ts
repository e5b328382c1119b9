import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { MintLayout } from '@solana/spl-token';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  associatedTokenAccount,
  bootstrapChain,
  BootstrapRefusedError,
  createRpcClient,
  LOCALNET_SEED,
  MAINNET_USDC_MINT,
} from '../src/adapters/solana/index.js';
import { platformWalletStore } from '../src/adapters/postgres/platform-wallets.repository.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
beforeAll(async () => {
  env = await openTestEnv({}, { chain: true });
});
afterAll(async () => {
  await env?.close();
});

const tokenAmount = async (address: string) =>
  BigInt(
    (await env.app.rpc.call<{ value: { amount: string } }>('getTokenAccountBalance', [address])).value.amount,
  );

describe('bootstrapChain on the localnet', () => {
  test('creates mints, platform token accounts and seeds, and a second run changes nothing', async () => {
    const first = await env.app.bootstrapChain();
    expect(first.cluster).toBe('localnet');
    expect(first.usdcMint.toBase58()).toBe(MAINNET_USDC_MINT);

    const mintAccount = await env.app.rpc.call<{ value: { data: [string, string] } }>('getAccountInfo', [
      MAINNET_USDC_MINT,
      { encoding: 'base64' },
    ]);
    const mint = MintLayout.decode(Buffer.from(mintAccount.value.data[0], 'base64'));
    expect(mint.decimals).toBe(6);
    expect(mint.mintAuthority.toBase58()).toBe(first.signers.usdc_mint_authority.publicKey.toBase58());

    expect(await tokenAmount(first.poolUsdcVault.toBase58())).toBe(LOCALNET_SEED.poolUsdc);
    expect(await tokenAmount(first.poolNativeVault.toBase58())).toBe(LOCALNET_SEED.poolNative);
    const fundNative = associatedTokenAccount(first.nativeMint, first.signers.creator_fund.publicKey);
    expect(await tokenAmount(fundNative.toBase58())).toBe(LOCALNET_SEED.creatorFundNative);
    const treasuryUsdc = associatedTokenAccount(first.usdcMint, first.signers.treasury.publicKey);
    expect(await tokenAmount(treasuryUsdc.toBase58())).toBe(0n);

    const transactionsBefore = await env.app.rpc.call<number>('getTransactionCount', []);
    const second = await env.app.bootstrapChain();
    expect(await env.app.rpc.call<number>('getTransactionCount', [])).toBe(transactionsBefore);
    expect(second.nativeMint.toBase58()).toBe(first.nativeMint.toBase58());
    expect(second.signers.fee_payer.publicKey.toBase58()).toBe(first.signers.fee_payer.publicKey.toBase58());
    expect(await tokenAmount(second.poolUsdcVault.toBase58())).toBe(LOCALNET_SEED.poolUsdc);
  });

  test('platform secrets are stored sealed, never in the clear', async () => {
    const rows = await env.app.db.selectFrom('platform_wallets').selectAll().execute();
    expect(rows.map((r) => r.role)).toEqual(expect.arrayContaining(['fee_payer', 'treasury', 'native_mint']));
    for (const row of rows) expect(row.sealed_secret).toMatch(/^v1\./);
  });
});

describe('bootstrapChain elsewhere', () => {
  let server: http.Server;
  let url: string;
  beforeAll(async () => {
    // A peer answering like mainnet-beta: only its genesis hash matters to the refusal.
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const { id } = JSON.parse(body) as { id: number };
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({ jsonrpc: '2.0', id, result: '5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d' }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  test('refuses mainnet-beta before touching anything', async () => {
    const attempt = bootstrapChain(
      {
        rpc: createRpcClient(url),
        wallets: platformWalletStore(env.app.db),
        keystore: env.app.keystore,
        log: () => {},
      },
      {},
    );
    await expect(attempt).rejects.toThrow(BootstrapRefusedError);
    await expect(attempt).rejects.toThrow(/mainnet-beta/);
  });
});
