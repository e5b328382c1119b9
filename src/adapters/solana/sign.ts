import type { Transaction } from '@solana/web3.js';
import bs58 from 'bs58';
import type { Signer } from './keypair.js';
import { compactU16, compileLegacyMessage, keyText } from './message-compiler.js';

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
 * message exactly once, with our own compiler (message-compiler.ts): web3.js `compileMessage`,
 * `addSignature` and `serialize` each cost more than both ed25519 signatures. The bytes are the
 * ones web3.js produces (the tests compare them): a compact-u16 signature count, the 64-byte
 * signatures in the message's signer order (fee payer first), then the message.
 *
 * Every signer the message requires must be given; a signer it does not name is a bug in the
 * caller (a builder and its signer list disagree) and throws too.
 */
export function signTransaction(tx: Transaction, signers: readonly Signer[]): SignedTransaction {
  if (!tx.feePayer || !tx.recentBlockhash) throw new Error('a transaction needs a fee payer and a blockhash');
  if (tx.nonceInfo) throw new Error('durable-nonce transactions are not supported');
  const message = compileLegacyMessage(tx.feePayer, tx.recentBlockhash, tx.instructions);
  const messageBytes = message.bytes;
  const required = message.signers;
  const byKey = new Map(signers.map((s) => [keyText(s.publicKey), s]));
  const requiredKeys = new Set(required.map(keyText));
  const extra = signers.find((s) => !requiredKeys.has(keyText(s.publicKey)));
  if (extra) throw new Error(`signer ${extra.publicKey.toBase58()} is not required by this transaction`);
  const signatures = required.map((key) => {
    const signer = byKey.get(keyText(key));
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
