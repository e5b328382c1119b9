import type { PublicKey } from '@solana/web3.js';
import { Keypair, SystemProgram, Transaction } from '@solana/web3.js';
import { describe, expect, test } from 'vitest';
import { compileLegacyMessage } from './message-compiler.js';
import { buildCreateAtas, buildMintTo, buildTransfer } from './transaction-builder.js';

const randomKey = () => Keypair.generate().publicKey;
const blockhash = () => randomKey().toBase58();

/** What web3.js writes for the same transaction: the reference our compiler must match byte for byte. */
function web3Bytes(tx: Transaction): { bytes: Buffer; signers: string[] } {
  const message = tx.compileMessage();
  return {
    bytes: message.serialize(),
    signers: message.accountKeys.slice(0, message.header.numRequiredSignatures).map((key) => key.toBase58()),
  };
}

function ours(tx: Transaction): { bytes: Buffer; signers: string[] } {
  const compiled = compileLegacyMessage(tx.feePayer!, tx.recentBlockhash!, tx.instructions);
  return { bytes: compiled.bytes, signers: compiled.signers.map((key) => key.toBase58()) };
}

describe('compileLegacyMessage', () => {
  test('writes the bytes web3.js writes for transfers of 1 to 16 legs, with and without ATA creation and memo', () => {
    for (let round = 0; round < 60; round++) {
      const payer = randomKey();
      const user = randomKey();
      const mint = randomKey();
      const recipients = Array.from({ length: 1 + (round % 16) }, randomKey);
      const tx = buildTransfer({
        feePayer: payer,
        recentBlockhash: blockhash(),
        legs: recipients.map((to, k) => ({ mint, decimals: 6, from: user, to, amount: BigInt(k + 1) })),
        ...(round % 2 === 0 ? { memo: `ledgerfeed:post:${round}` } : {}),
        createRecipientAtas: round % 3 === 0,
      });
      const expected = web3Bytes(tx);
      expect(ours(tx)).toEqual(expected);
    }
  });

  test('merges a key used twice (a recipient paid twice, the fee payer inside an instruction)', () => {
    const payer = randomKey();
    const user = randomKey();
    const mint = randomKey();
    const twice = randomKey();
    const tx = buildTransfer({
      feePayer: payer,
      recentBlockhash: blockhash(),
      legs: [
        { mint, decimals: 6, from: user, to: twice, amount: 1n },
        { mint, decimals: 6, from: user, to: twice, amount: 2n },
        { mint, decimals: 6, from: user, to: payer, amount: 3n },
      ],
      createRecipientAtas: true,
    });
    expect(ours(tx)).toEqual(web3Bytes(tx));
  });

  test('matches for mints, ATA creation and a System transfer where the fee payer is not the first key named', () => {
    const payer = randomKey();
    const authority = randomKey();
    const mints = [randomKey(), randomKey(), randomKey()];
    const cases = [
      buildMintTo({
        feePayer: payer,
        recentBlockhash: blockhash(),
        mint: mints[0]!,
        decimals: 9,
        authority,
        to: randomKey(),
        amount: 5n,
      }),
      buildCreateAtas({ feePayer: payer, recentBlockhash: blockhash(), owner: randomKey(), mints }),
      new Transaction({ feePayer: payer, recentBlockhash: blockhash() }).add(
        SystemProgram.transfer({ fromPubkey: authority, toPubkey: payer, lamports: 1n }),
      ),
    ];
    for (const tx of cases) expect(ours(tx)).toEqual(web3Bytes(tx));
  });

  test('orders keys the way web3.js does when base58 texts differ only in letter case', () => {
    // Keys whose base58 begins with the same letter in both cases exercise the collator's caseFirst.
    const keys: PublicKey[] = [];
    while (keys.length < 12) {
      const key = randomKey();
      if ('aA'.includes(key.toBase58()[0]!) || 'bB'.includes(key.toBase58()[0]!)) keys.push(key);
    }
    const payer = randomKey();
    const tx = new Transaction({ feePayer: payer, recentBlockhash: blockhash() });
    for (const key of keys)
      tx.add(SystemProgram.transfer({ fromPubkey: payer, toPubkey: key, lamports: 1n }));
    expect(ours(tx)).toEqual(web3Bytes(tx));
  });
});
