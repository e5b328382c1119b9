import type { Transaction } from '@solana/web3.js';
import bs58 from 'bs58';
import type { Signer } from './keypair.js';

export interface SignedTransaction {
  /** Wire bytes, ready for sendTransaction and for the outbox row. */
  readonly wire: Buffer;
  /** base58 of the first (fee payer's) signature: the transaction id, our `swap_tx`. */
  readonly signature: string;
}

/** Largest wire transaction a validator accepts (IPv6 MTU minus headers), in bytes. */
export const MAX_TRANSACTION_BYTES = 1232;

/**
 * Signs with node:crypto signers (see keypair.ts) and writes the wire bytes itself, compiling the
 * message exactly once. web3.js `addSignature` and `serialize` each recompile the message (~0.4 ms
 * apiece, more than both ed25519 signatures), which alone would hold a worker under 600 tx/s. The
 * bytes are the ones web3.js produces (the tests compare them): a compact-u16 signature count, the
 * 64-byte signatures in the message's signer order (fee payer first), then the message.
 *
 * Every signer the message requires must be given; a signer it does not name is a bug in the
 * caller (a builder and its signer list disagree) and throws too.
 */
export function signTransaction(tx: Transaction, signers: readonly Signer[]): SignedTransaction {
  const message = tx.compileMessage();
  const messageBytes = message.serialize();
  const required = message.accountKeys.slice(0, message.header.numRequiredSignatures);
  const extra = signers.find((s) => !required.some((key) => key.equals(s.publicKey)));
  if (extra) throw new Error(`signer ${extra.publicKey.toBase58()} is not required by this transaction`);
  const byKey = new Map(signers.map((s) => [s.publicKey.toBase58(), s]));
  const signatures = required.map((key) => {
    const signer = byKey.get(key.toBase58());
    if (!signer) throw new Error(`missing signer ${key.toBase58()} required by this transaction`);
    const signature = Buffer.from(signer.sign(messageBytes));
    if (signature.length !== 64)
      throw new Error(`signer ${key.toBase58()} returned ${signature.length} bytes`);
    return signature;
  });
  // Keep the Transaction object coherent for anyone who inspects it after signing.
  tx.signatures = required.map((publicKey, i) => ({ publicKey, signature: signatures[i] ?? null }));

  const wire = Buffer.concat([compactU16(signatures.length), ...signatures, messageBytes]);
  if (wire.length > MAX_TRANSACTION_BYTES) {
    throw new RangeError(
      `transaction is ${wire.length} bytes; at most ${MAX_TRANSACTION_BYTES} fit in a packet`,
    );
  }
  const [first] = signatures;
  if (!first) throw new Error('transaction requires no signature');
  return { wire, signature: bs58.encode(first) };
}

/** Solana's "shortvec" length prefix: 7 bits per byte, high bit = more bytes follow. */
function compactU16(value: number): Buffer {
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
