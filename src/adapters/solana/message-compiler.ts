import type { PublicKey, TransactionInstruction } from '@solana/web3.js';
import bs58 from 'bs58';

/**
 * Compiles a legacy transaction message to its wire bytes: the bytes web3.js writes with
 * `tx.compileMessage().serialize()` (the tests compare them), for a tenth of the CPU. web3.js
 * base58-encodes every key several times per compile (JSON of the whole transaction to see if it
 * changed, a string per key to dedupe, another to sort, another to index), builds a fresh
 * `Intl` collator per comparison and base58-encodes each instruction's data only to decode it
 * again: ~1.5 ms a payment, the largest item of a paid post's CPU in the write-path bench.
 *
 * Here each key's base58 text and bytes are computed once per PublicKey object (the write path
 * reuses its mint, program, platform and token-account keys) and the one collator is shared.
 */

export interface CompiledMessage {
  /** The serialized message: what every signer signs. */
  readonly bytes: Buffer;
  /** The keys that must sign, in signature order (fee payer first). */
  readonly signers: readonly PublicKey[];
}

interface Meta {
  pubkey: PublicKey;
  key: string;
  isSigner: boolean;
  isWritable: boolean;
}

const base58Of = new WeakMap<PublicKey, string>();
const bytesOf = new WeakMap<PublicKey, Buffer>();

/** A key's base58 text, computed once per PublicKey object. */
export function keyText(pubkey: PublicKey): string {
  let text = base58Of.get(pubkey);
  if (text === undefined) base58Of.set(pubkey, (text = pubkey.toBase58()));
  return text;
}

function keyBytes(pubkey: PublicKey): Buffer {
  let bytes = bytesOf.get(pubkey);
  if (bytes === undefined) bytesOf.set(pubkey, (bytes = pubkey.toBuffer()));
  return bytes;
}

/** web3.js orders keys of the same kind by `a.localeCompare(b, 'en', these options)`. */
const keyOrder = new Intl.Collator('en', {
  localeMatcher: 'best fit',
  usage: 'sort',
  sensitivity: 'variant',
  ignorePunctuation: false,
  numeric: false,
  caseFirst: 'lower',
});

/** The last blockhash decoded: every payment signed in the same second shares it. */
let lastBlockhash: { text: string; bytes: Buffer } | undefined;

function blockhashBytes(blockhash: string): Buffer {
  if (lastBlockhash?.text !== blockhash) {
    const bytes = Buffer.from(bs58.decode(blockhash));
    if (bytes.length !== 32) throw new RangeError(`blockhash ${blockhash} is not 32 bytes`);
    lastBlockhash = { text: blockhash, bytes };
  }
  return lastBlockhash.bytes;
}

export function compileLegacyMessage(
  feePayer: PublicKey,
  recentBlockhash: string,
  instructions: readonly TransactionInstruction[],
): CompiledMessage {
  // Every account an instruction names, then each program, merged per key (a key is a signer or
  // writable if any of its uses is).
  const metas = new Map<string, Meta>();
  const use = (pubkey: PublicKey, isSigner: boolean, isWritable: boolean) => {
    const key = keyText(pubkey);
    const meta = metas.get(key);
    if (meta) {
      meta.isSigner ||= isSigner;
      meta.isWritable ||= isWritable;
    } else {
      metas.set(key, { pubkey, key, isSigner, isWritable });
    }
  };
  for (const instruction of instructions) {
    for (const meta of instruction.keys) use(meta.pubkey, meta.isSigner, meta.isWritable);
  }
  for (const instruction of instructions) use(instruction.programId, false, false);

  const payerKey = keyText(feePayer);
  const others = [...metas.values()]
    .filter((meta) => meta.key !== payerKey)
    .sort((x, y) => {
      if (x.isSigner !== y.isSigner) return x.isSigner ? -1 : 1;
      if (x.isWritable !== y.isWritable) return x.isWritable ? -1 : 1;
      return keyOrder.compare(x.key, y.key);
    });
  const ordered: Meta[] = [{ pubkey: feePayer, key: payerKey, isSigner: true, isWritable: true }, ...others];

  const signers = ordered.filter((meta) => meta.isSigner);
  const readonlySigned = signers.filter((meta) => !meta.isWritable).length;
  const readonlyUnsigned = ordered.filter((meta) => !meta.isSigner && !meta.isWritable).length;
  const indexOf = new Map(ordered.map((meta, index) => [meta.key, index]));

  const parts: Buffer[] = [
    Buffer.from([signers.length, readonlySigned, readonlyUnsigned]),
    compactU16(ordered.length),
    ...ordered.map((meta) => keyBytes(meta.pubkey)),
    blockhashBytes(recentBlockhash),
    compactU16(instructions.length),
  ];
  for (const instruction of instructions) {
    parts.push(
      Buffer.from([indexOf.get(keyText(instruction.programId))!]),
      compactU16(instruction.keys.length),
      Buffer.from(instruction.keys.map((meta) => indexOf.get(keyText(meta.pubkey))!)),
      compactU16(instruction.data.length),
      instruction.data,
    );
  }
  return { bytes: Buffer.concat(parts), signers: signers.map((meta) => meta.pubkey) };
}

/** Solana's "shortvec" length prefix: 7 bits per byte, high bit = more bytes follow. */
export function compactU16(value: number): Buffer {
  const bytes: number[] = [];
  let rest = value;
  for (;;) {
    const low = rest & 0x7f;
    rest >>= 7;
    if (rest === 0) {
      bytes.push(low);
      return Buffer.from(bytes);
    }
    bytes.push(low | 0x80);
  }
}
