import { createPrivateKey, createPublicKey, randomBytes, sign, type KeyObject } from 'node:crypto';
import { PublicKey } from '@solana/web3.js';

/**
 * Wallet keys as 32-byte ed25519 seeds (what the keystore seals), and signers that sign with
 * `node:crypto`. OpenSSL's ed25519 gives byte-identical signatures to web3.js's pure-JS signer
 * (ed25519 is deterministic) at about a tenth of the cost, which the ~1,000 tx/s write path needs.
 */

/** Signs a compiled transaction message; `sign` returns the 64-byte ed25519 signature. */
export interface Signer {
  readonly publicKey: PublicKey;
  sign(message: Uint8Array): Uint8Array;
}

export interface GeneratedWallet {
  /** base58 public key: the wallet's address. */
  readonly address: string;
  /** 32-byte ed25519 seed: the secret. Seal it with the keystore before it leaves memory. */
  readonly seed: Uint8Array;
}

const SEED_BYTES = 32;
/** DER of PKCS#8 PrivateKeyInfo for Ed25519 (RFC 8410) up to the 32 seed bytes that follow. */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

export function generateWallet(): GeneratedWallet {
  const seed = new Uint8Array(randomBytes(SEED_BYTES));
  return { address: publicKeyOf(privateKeyFromSeed(seed)).toBase58(), seed };
}

/**
 * The KeyObject is built once here and kept by the signer: parsing DER on every signature would
 * cost as much as the signing. Hold the signer (not the seed) for a wallet that signs often.
 */
export function signerFromSeed(seed: Uint8Array): Signer {
  const privateKey = privateKeyFromSeed(seed);
  const publicKey = publicKeyOf(privateKey);
  return {
    publicKey,
    sign: (message) => new Uint8Array(sign(null, message, privateKey)),
  };
}

function privateKeyFromSeed(seed: Uint8Array): KeyObject {
  if (seed.length !== SEED_BYTES)
    throw new RangeError(`ed25519 seed must be ${SEED_BYTES} bytes, got ${seed.length}`);
  const der = Buffer.concat([PKCS8_ED25519_PREFIX, seed]);
  try {
    return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  } finally {
    // The DER copy holds the seed; do not leave it for the garbage collector to reveal.
    der.fill(0);
  }
}

function publicKeyOf(privateKey: KeyObject): PublicKey {
  // The SPKI DER of an Ed25519 key ends with the 32 raw public key bytes.
  const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  return new PublicKey(spki.subarray(spki.length - 32));
}
