import { PublicKey } from '@solana/web3.js';
import type { Db } from '../postgres/db.js';
import { insertPlatformWallet, listPlatformWallets } from '../postgres/platform-wallets.repository.js';
import { generateWallet, signerFromSeed, type Signer } from './keypair.js';
import type { Keystore } from './keystore.js';

/** Keys the platform signs with. Mints created by the bootstrap are roles too (their keypair signs creation). */
export const PLATFORM_SIGNER_ROLES = [
  'fee_payer',
  'treasury',
  'creator_fund',
  'pool_authority',
  'usdc_mint_authority',
  'native_mint_authority',
] as const;
export type PlatformSignerRole = (typeof PLATFORM_SIGNER_ROLES)[number];

export type PlatformSigners = Readonly<Record<PlatformSignerRole, Signer>>;

/**
 * The platform's signers, created on first use: a new ed25519 key per role, sealed with the
 * master key and stored in Postgres. Every process of a deployment reads the same keys.
 */
export async function loadPlatformSigners(db: Db, keystore: Keystore): Promise<PlatformSigners> {
  const entries = await Promise.all(
    PLATFORM_SIGNER_ROLES.map(async (role) => [role, await ensureSigner(db, keystore, role)]),
  );
  return Object.fromEntries(entries) as PlatformSigners;
}

/** A keypair-backed role (for example a mint the bootstrap creates), created on first use. */
export async function ensureSigner(db: Db, keystore: Keystore, role: string): Promise<Signer> {
  const existing = (await listPlatformWallets(db)).find((row) => row.role === role);
  const row =
    existing ??
    (await (async () => {
      const wallet = generateWallet();
      return insertPlatformWallet(db, {
        role,
        address: wallet.address,
        sealedSecret: keystore.encrypt(wallet.seed, wallet.address),
      });
    })());
  if (!row.sealedSecret)
    throw new Error(`platform wallet ${role} (${row.address}) has no key: it is configured, not ours`);
  const signer = signerFromSeed(keystore.decrypt(row.sealedSecret, row.address));
  if (!signer.publicKey.equals(new PublicKey(row.address))) {
    throw new Error(`platform wallet ${role}: the sealed key does not match ${row.address}`);
  }
  return signer;
}
