import { describe, expect, test } from 'vitest';
import { DEVNET_USDC_MINT, defaultUsdcMint, feePayerFunding, MAINNET_USDC_MINT } from './bootstrap.js';

describe('what the bootstrap assumes of each cluster', () => {
  test('USDC: ours at the mainnet address on the localnet, Circle’s on devnet, a mint of our own elsewhere', () => {
    expect(defaultUsdcMint('localnet')).toBe(MAINNET_USDC_MINT);
    expect(defaultUsdcMint('devnet')).toBe(DEVNET_USDC_MINT);
    expect(defaultUsdcMint('local-validator')).toBeUndefined();
    expect(defaultUsdcMint('testnet')).toBeUndefined();
  });

  test('the fee payer asks public faucets for 1 SOL, our validators for 100, and mainnet for nothing', () => {
    expect(feePayerFunding('devnet')).toEqual({ minimum: 500_000_000, airdrop: 1_000_000_000 });
    expect(feePayerFunding('testnet')).toEqual({ minimum: 500_000_000, airdrop: 1_000_000_000 });
    expect(feePayerFunding('local-validator')?.airdrop).toBe(100_000_000_000);
    expect(feePayerFunding('localnet')?.airdrop).toBe(100_000_000_000);
    expect(feePayerFunding('mainnet-beta')).toBeUndefined();
  });
});
