import { randomBytes } from 'node:crypto';
import { Keypair, PublicKey, SystemProgram, Transaction } from '@solana/web3.js';
import { describe, expect, test } from 'vitest';
import { generateWallet, signerFromSeed } from './keypair.js';

describe('generateWallet', () => {
  test('returns a 32-byte seed whose web3.js keypair has the returned address', () => {
    const wallet = generateWallet();
    expect(wallet.seed).toHaveLength(32);
    expect(Keypair.fromSeed(wallet.seed).publicKey.toBase58()).toBe(wallet.address);
  });

  test('two wallets never share a seed', () => {
    expect(generateWallet().address).not.toBe(generateWallet().address);
  });
});

describe('signerFromSeed', () => {
  test('signs a transaction message byte-identically to web3.js Keypair.fromSeed + tx.sign', () => {
    for (let i = 0; i < 20; i++) {
      const seed = new Uint8Array(randomBytes(32));
      const keypair = Keypair.fromSeed(seed);
      const tx = new Transaction({
        feePayer: keypair.publicKey,
        blockhash: new PublicKey(randomBytes(32)).toBase58(),
        lastValidBlockHeight: 1,
      }).add(
        SystemProgram.transfer({
          fromPubkey: keypair.publicKey,
          toPubkey: PublicKey.unique(),
          lamports: 1 + i,
        }),
      );
      const signer = signerFromSeed(seed);
      expect(signer.publicKey.equals(keypair.publicKey)).toBe(true);
      const ours = signer.sign(tx.serializeMessage());
      tx.sign(keypair);
      expect(Buffer.from(ours)).toEqual(tx.signatures[0]?.signature);
    }
  });

  test('refuses a seed that is not 32 bytes', () => {
    expect(() => signerFromSeed(new Uint8Array(64))).toThrow(RangeError);
  });
});
