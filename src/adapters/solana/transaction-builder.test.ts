import {
  ASSOCIATED_TOKEN_PROGRAM_ID,
  decodeMintToCheckedInstruction,
  decodeTransferCheckedInstruction,
  getAssociatedTokenAddressSync,
  TOKEN_PROGRAM_ID,
} from '@solana/spl-token';
import { Keypair, PublicKey, SystemProgram } from '@solana/web3.js';
import { assert, describe, expect, test } from 'vitest';
import { buildCreateAtas, buildMintTo, buildTransfer, MEMO_PROGRAM_ID } from './transaction-builder.js';

const key = (byte: number) => Keypair.fromSeed(new Uint8Array(32).fill(byte)).publicKey;
const feePayer = key(1);
const user = key(2);
const treasury = key(3);
const author = key(4);
const USDC = new PublicKey(new Uint8Array(32).fill(200));
const NATIVE = new PublicKey(new Uint8Array(32).fill(201));
const recentBlockhash = new PublicKey(new Uint8Array(32).fill(9)).toBase58();
const ata = (mint: PublicKey, owner: PublicKey) => getAssociatedTokenAddressSync(mint, owner);

describe('buildTransfer', () => {
  const paidReply = () =>
    buildTransfer({
      feePayer,
      recentBlockhash,
      legs: [
        { mint: USDC, decimals: 6, from: user, to: treasury, amount: 500_000n },
        { mint: USDC, decimals: 6, from: user, to: author, amount: 500_000n },
      ],
      memo: 'lf:reply:01J9Z',
      createRecipientAtas: true,
    });

  test('creates each recipient ATA (paid by the fee payer), then one transferChecked per leg, then the memo', () => {
    const tx = paidReply();
    expect(tx.feePayer?.equals(feePayer)).toBe(true);
    expect(tx.recentBlockhash).toBe(recentBlockhash);
    expect(tx.instructions.map((ix) => ix.programId.toBase58())).toEqual([
      ASSOCIATED_TOKEN_PROGRAM_ID.toBase58(),
      ASSOCIATED_TOKEN_PROGRAM_ID.toBase58(),
      TOKEN_PROGRAM_ID.toBase58(),
      TOKEN_PROGRAM_ID.toBase58(),
      MEMO_PROGRAM_ID.toBase58(),
    ]);
    const [createTreasury, createAuthor] = tx.instructions;
    // CreateIdempotent: accounts payer, ata, owner, mint, system program, token program; data [1].
    expect(createTreasury?.keys.map((k) => k.pubkey.toBase58())).toEqual(
      [feePayer, ata(USDC, treasury), treasury, USDC, SystemProgram.programId, TOKEN_PROGRAM_ID].map((k) =>
        k.toBase58(),
      ),
    );
    expect(createTreasury?.data).toEqual(Buffer.from([1]));
    expect(createAuthor?.keys[1]?.pubkey.equals(ata(USDC, author))).toBe(true);
  });

  test("each transferChecked moves the leg amount between the owners' ATAs with the owner signing", () => {
    const tx = paidReply();
    const legs = tx.instructions.slice(2, 4).map((ix) => decodeTransferCheckedInstruction(ix));
    expect(
      legs.map((leg) => ({
        source: leg.keys.source.pubkey.toBase58(),
        mint: leg.keys.mint.pubkey.toBase58(),
        destination: leg.keys.destination.pubkey.toBase58(),
        owner: leg.keys.owner.pubkey.toBase58(),
        ownerSigns: leg.keys.owner.isSigner,
        amount: leg.data.amount,
        decimals: leg.data.decimals,
      })),
    ).toEqual(
      [treasury, author].map((to) => ({
        source: ata(USDC, user).toBase58(),
        mint: USDC.toBase58(),
        destination: ata(USDC, to).toBase58(),
        owner: user.toBase58(),
        ownerSigns: true,
        amount: 500_000n,
        decimals: 6,
      })),
    );
  });

  test('the memo is Memo v2 with no accounts and the UTF-8 text as data', () => {
    const memo = paidReply().instructions[4];
    expect(memo?.keys).toEqual([]);
    expect(memo?.data.toString('utf8')).toBe('lf:reply:01J9Z');
  });

  test('the compiled message needs exactly the fee payer (first) and the paying owner as signers', () => {
    const message = paidReply().compileMessage();
    expect(message.header.numRequiredSignatures).toBe(2);
    expect(message.accountKeys[0]?.equals(feePayer)).toBe(true);
    expect(message.accountKeys[1]?.equals(user)).toBe(true);
  });

  test('creates a recipient ATA once when several legs pay the same owner and mint, and none unless asked', () => {
    const legs = [
      { mint: USDC, decimals: 6, from: user, to: treasury, amount: 1n },
      { mint: USDC, decimals: 6, from: author, to: treasury, amount: 2n },
      { mint: NATIVE, decimals: 9, from: user, to: treasury, amount: 3n },
    ];
    const withAtas = buildTransfer({ feePayer, recentBlockhash, legs, createRecipientAtas: true });
    expect(
      withAtas.instructions.filter((ix) => ix.programId.equals(ASSOCIATED_TOKEN_PROGRAM_ID)),
    ).toHaveLength(2);
    const without = buildTransfer({ feePayer, recentBlockhash, legs });
    expect(without.instructions.map((ix) => ix.programId.equals(TOKEN_PROGRAM_ID))).toEqual([
      true,
      true,
      true,
    ]);
  });

  test('a leg marked createRecipientAta creates only its own recipient ATA, before every transfer', () => {
    const tx = buildTransfer({
      feePayer,
      recentBlockhash,
      legs: [
        { mint: USDC, decimals: 6, from: user, to: treasury, amount: 1n },
        { mint: USDC, decimals: 6, from: user, to: author, amount: 2n, createRecipientAta: true },
      ],
    });
    expect(tx.instructions.map((ix) => ix.programId.toBase58())).toEqual([
      ASSOCIATED_TOKEN_PROGRAM_ID.toBase58(),
      TOKEN_PROGRAM_ID.toBase58(),
      TOKEN_PROGRAM_ID.toBase58(),
    ]);
    const create = tx.instructions[0]!;
    expect(create.keys.map((k) => k.pubkey.toBase58())).toEqual(
      [feePayer, ata(USDC, author), author, USDC, SystemProgram.programId, TOKEN_PROGRAM_ID].map((k) =>
        k.toBase58(),
      ),
    );
    expect([...create.data]).toEqual([1]); // the idempotent variant: an existing account is left alone
  });

  test('accepts a 566-byte memo and refuses 567 bytes, counting UTF-8 bytes rather than characters', () => {
    const legs = [{ mint: USDC, decimals: 6, from: user, to: treasury, amount: 1n }];
    expect(() => buildTransfer({ feePayer, recentBlockhash, legs, memo: 'a'.repeat(566) })).not.toThrow();
    expect(() => buildTransfer({ feePayer, recentBlockhash, legs, memo: 'a'.repeat(567) })).toThrow(
      RangeError,
    );
    expect(() => buildTransfer({ feePayer, recentBlockhash, legs, memo: 'é'.repeat(284) })).toThrow(
      /568 bytes/,
    );
  });

  test('refuses no legs, a zero or negative amount, and an amount above u64, with RangeError', () => {
    const leg = { mint: USDC, decimals: 6, from: user, to: treasury };
    expect(() => buildTransfer({ feePayer, recentBlockhash, legs: [] })).toThrow(/at least one leg/);
    expect(() => buildTransfer({ feePayer, recentBlockhash, legs: [{ ...leg, amount: 0n }] })).toThrow(
      /legs\[0\]\.amount must be greater than 0/,
    );
    expect(() => buildTransfer({ feePayer, recentBlockhash, legs: [{ ...leg, amount: -5n }] })).toThrow(
      RangeError,
    );
    expect(() => buildTransfer({ feePayer, recentBlockhash, legs: [{ ...leg, amount: 1n << 64n }] })).toThrow(
      /u64/,
    );
  });

  test('refuses a token account (off the curve) passed as an owner', () => {
    const leg = { mint: USDC, decimals: 6, from: user, to: ata(USDC, treasury), amount: 1n };
    expect(() => buildTransfer({ feePayer, recentBlockhash, legs: [leg] })).toThrow();
  });
});

describe('buildCreateAtas', () => {
  test("creates the owner's ATA for each distinct mint, idempotently, paid by the fee payer", () => {
    const tx = buildCreateAtas({ feePayer, recentBlockhash, owner: user, mints: [USDC, NATIVE, USDC] });
    expect(tx.instructions).toHaveLength(2);
    expect(
      tx.instructions.map((ix) => [ix.keys[0]?.pubkey.toBase58(), ix.keys[1]?.pubkey.toBase58(), ix.data[0]]),
    ).toEqual([
      [feePayer.toBase58(), ata(USDC, user).toBase58(), 1],
      [feePayer.toBase58(), ata(NATIVE, user).toBase58(), 1],
    ]);
  });

  test('refuses an empty mint list', () => {
    expect(() => buildCreateAtas({ feePayer, recentBlockhash, owner: user, mints: [] })).toThrow(RangeError);
  });
});

describe('buildMintTo', () => {
  test('creates the recipient ATA, then mintToChecked into it signed by the mint authority', () => {
    const authority = key(5);
    const tx = buildMintTo({
      feePayer,
      recentBlockhash,
      mint: USDC,
      decimals: 6,
      authority,
      to: user,
      amount: 25_000_000n,
    });
    const [createAta, mintTo] = tx.instructions;
    expect(createAta?.programId.equals(ASSOCIATED_TOKEN_PROGRAM_ID)).toBe(true);
    assert(mintTo, 'a mintToChecked instruction follows the ATA creation');
    const mint = decodeMintToCheckedInstruction(mintTo);
    expect(mint.keys.mint.pubkey.equals(USDC)).toBe(true);
    expect(mint.keys.destination.pubkey.equals(ata(USDC, user))).toBe(true);
    expect(mint.keys.authority.pubkey.equals(authority)).toBe(true);
    expect(mint.data).toMatchObject({ amount: 25_000_000n, decimals: 6 });
  });

  test('skips ATA creation when createAta is false and refuses a zero amount', () => {
    const base = { feePayer, recentBlockhash, mint: USDC, decimals: 6, authority: key(5), to: user };
    expect(buildMintTo({ ...base, amount: 1n, createAta: false }).instructions).toHaveLength(1);
    expect(() => buildMintTo({ ...base, amount: 0n })).toThrow(RangeError);
  });
});
