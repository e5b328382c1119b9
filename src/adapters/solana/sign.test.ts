import { randomBytes } from 'node:crypto';
import { Keypair, PublicKey } from '@solana/web3.js';
import bs58 from 'bs58';
import { describe, expect, test } from 'vitest';
import { signerFromSeed } from './keypair.js';
import { MAX_TRANSACTION_BYTES, signTransaction } from './sign.js';
import { buildTransfer } from './transaction-builder.js';

/** Any address serves as a mint here: nothing is sent. */
const USDC = new PublicKey(Buffer.alloc(32, 9));

function fixture() {
  const payerSeed = new Uint8Array(randomBytes(32));
  const userSeed = new Uint8Array(randomBytes(32));
  const payer = Keypair.fromSeed(payerSeed);
  const user = Keypair.fromSeed(userSeed);
  const build = () =>
    buildTransfer({
      feePayer: payer.publicKey,
      recentBlockhash: new PublicKey(Buffer.alloc(32, 7)).toBase58(),
      legs: [
        {
          mint: USDC,
          decimals: 6,
          from: user.publicKey,
          to: Keypair.fromSeed(Buffer.alloc(32, 1)).publicKey,
          amount: 1_000_000n,
        },
      ],
    });
  return { payer, user, payerSeed, userSeed, build };
}

describe('signTransaction', () => {
  test('gives the same wire bytes as web3.js tx.sign, whatever order the signers come in', () => {
    const { payer, user, payerSeed, userSeed, build } = fixture();
    const reference = build();
    reference.sign(payer, user);
    const expected = reference.serialize();

    const signed = signTransaction(build(), [signerFromSeed(userSeed), signerFromSeed(payerSeed)]);
    expect(signed.wire).toEqual(expected);
    expect(signed.signature).toBe(bs58.encode(reference.signatures[0]?.signature ?? Buffer.alloc(0)));
  });

  test("the signature is the fee payer's, first in the wire after the signature count", () => {
    const { payerSeed, userSeed, build } = fixture();
    const signed = signTransaction(build(), [signerFromSeed(payerSeed), signerFromSeed(userSeed)]);
    expect(signed.wire[0]).toBe(2);
    expect(bs58.encode(signed.wire.subarray(1, 65))).toBe(signed.signature);
  });

  test('throws naming the key when a required signer is missing', () => {
    const { user, payerSeed, build } = fixture();
    expect(() => signTransaction(build(), [signerFromSeed(payerSeed)])).toThrow(
      `missing signer ${user.publicKey.toBase58()}`,
    );
  });

  test('throws when given a signer the transaction does not require', () => {
    const { payerSeed, userSeed, build } = fixture();
    const stranger = signerFromSeed(new Uint8Array(randomBytes(32)));
    expect(() =>
      signTransaction(build(), [signerFromSeed(payerSeed), signerFromSeed(userSeed), stranger]),
    ).toThrow(/not required/);
  });

  test('leaves the signatures on the Transaction, so web3.js serialize() (with verification) gives the same bytes', () => {
    const { payerSeed, userSeed, build } = fixture();
    const tx = build();
    const signed = signTransaction(tx, [signerFromSeed(payerSeed), signerFromSeed(userSeed)]);
    expect(tx.serialize()).toEqual(signed.wire);
  });

  test('refuses a transaction larger than a packet (1232 bytes) with RangeError', () => {
    const payerSeed = new Uint8Array(randomBytes(32));
    const payer = signerFromSeed(payerSeed);
    const legs = Array.from({ length: 30 }, (_, i) => ({
      mint: USDC,
      decimals: 6,
      from: payer.publicKey,
      to: Keypair.fromSeed(Buffer.alloc(32, 20 + i)).publicKey,
      amount: 1n,
    }));
    const tx = buildTransfer({ feePayer: payer.publicKey, recentBlockhash: USDC.toBase58(), legs });
    expect(() => signTransaction(tx, [payer])).toThrow(new RegExp(`at most ${MAX_TRANSACTION_BYTES}`));
  });
});
