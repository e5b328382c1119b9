import { PublicKey } from '@solana/web3.js';
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

/** A platform wallet as kept: its key sealed with the master key (none for a configured address). */
export interface SealedPlatformWallet {
  role: string;
  address: string;
  sealedSecret: string | null;
}

/**
 * Where the platform's sealed keys are kept (Postgres's `platform_wallets`, wired in
 * src/app/wiring.ts): this adapter signs, another one stores.
 */
export interface PlatformWalletStore {
  list(): Promise<SealedPlatformWallet[]>;
  /** Inserts the role unless it exists and answers the row that won (two processes agree on one key). */
  insert(wallet: SealedPlatformWallet): Promise<SealedPlatformWallet>;
}

/**
 * The platform's signers, created on first use: a new ed25519 key per role, sealed with the
 * master key and stored in Postgres. Every process of a deployment reads the same keys.
 */
export async function loadPlatformSigners(
  wallets: PlatformWalletStore,
  keystore: Keystore,
): Promise<PlatformSigners> {
  const entries = await Promise.all(
    PLATFORM_SIGNER_ROLES.map(async (role) => [role, await ensureSigner(wallets, keystore, role)]),
  );
  return Object.fromEntries(entries) as PlatformSigners;
}

/** A keypair-backed role (for example a mint the bootstrap creates), created on first use. */
export async function ensureSigner(
  wallets: PlatformWalletStore,
  keystore: Keystore,
  role: string,
): Promise<Signer> {
  const existing = (await wallets.list()).find((row) => row.role === role);
  const row =
    existing ??
    (await (async () => {
      const wallet = generateWallet();
      return wallets.insert({
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
