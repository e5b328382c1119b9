import {
  createAssociatedTokenAccountIdempotentInstruction,
  createInitializeMint2Instruction,
  MINT_SIZE,
  MintLayout,
  TOKEN_PROGRAM_ID,
} from '@solana/spl-token';
import { PublicKey, SystemProgram, Transaction, type TransactionInstruction } from '@solana/web3.js';
import { detectCluster, priorityFeeFor, type Cluster } from './cluster.js';
import { sendAndConfirm } from './confirm.js';
import type { Keystore } from './keystore.js';
import type { Signer } from './keypair.js';
import {
  ensureSigner,
  loadPlatformSigners,
  type PlatformSigners,
  type PlatformWalletStore,
} from './platform-keys.js';
import type { RpcClient } from './rpc-client.js';
import { signTransaction } from './sign.js';
import { associatedTokenAccount, buildMintTo } from './transaction-builder.js';

/** The mainnet USDC mint: on the localnet our own USDC lives at the same address. */
export const MAINNET_USDC_MINT = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
/** Circle's USDC on devnet (test USDC from https://faucet.circle.com): the default there. */
export const DEVNET_USDC_MINT = '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU';

/** The USDC mint a cluster uses when USDC_MINT is unset; undefined: a mint of our own. */
export function defaultUsdcMint(cluster: Cluster): string | undefined {
  if (cluster === 'localnet') return MAINNET_USDC_MINT;
  if (cluster === 'devnet') return DEVNET_USDC_MINT;
  return undefined;
}

/**
 * How the fee payer gets SOL: below `minimum` it asks for an airdrop of `airdrop` lamports. Our
 * validators grant anything; the public faucets grant 1 SOL or so a request and rate-limit, so on
 * devnet and testnet it asks for 1 SOL and, when refused, says how much to send where.
 */
export function feePayerFunding(cluster: Cluster): { minimum: number; airdrop: number } | undefined {
  if (cluster === 'localnet' || cluster === 'local-validator')
    return { minimum: LOCALNET_SEED.feePayerLamports / 10, airdrop: LOCALNET_SEED.feePayerLamports };
  if (cluster === 'devnet' || cluster === 'testnet') return { minimum: 500_000_000, airdrop: 1_000_000_000 };
  return undefined;
}
export const USDC_DECIMALS = 6;
/** Decimals of the native token the bootstrap creates. */
export const NATIVE_DECIMALS = 9;

/** What the bootstrap seeds on a cluster where we mint both tokens, when the balance is zero (base units). */
export const LOCALNET_SEED = {
  feePayerLamports: 100_000_000_000, // 100 SOL
  creatorFundNative: 10_000_000n * 10n ** BigInt(NATIVE_DECIMALS),
  poolUsdc: 1_000_000n * 10n ** BigInt(USDC_DECIMALS),
  poolNative: 10_000_000n * 10n ** BigInt(NATIVE_DECIMALS),
} as const;

export interface PlatformChain {
  cluster: Cluster;
  signers: PlatformSigners;
  usdcMint: PublicKey;
  nativeMint: PublicKey;
  nativeDecimals: number;
  /** Token accounts (ATAs of the pool authority) holding the swap pool's reserves. */
  poolUsdcVault: PublicKey;
  poolNativeVault: PublicKey;
  /**
   * We mint both tokens here: a cluster that is not public (our localnet, or a validator we run,
   * such as compose's) whose USDC and native mints have our authorities. Then the bootstrap seeds
   * the pool and the creator fund, and the dev faucet works. Never on mainnet, devnet or testnet.
   */
  mintsTestTokens: boolean;
  /**
   * Priority fee of every platform transaction, micro-lamports per compute unit (0: none): the
   * cluster's default (priorityFeeFor), or SOLANA_PRIORITY_FEE.
   */
  priorityFeeMicroLamports: number;
}

export interface BootstrapDeps {
  rpc: RpcClient;
  wallets: PlatformWalletStore;
  keystore: Keystore;
  log: (message: string) => void;
}

export interface BootstrapConfig {
  usdcMint?: string;
  nativeMint?: string;
  /** SOLANA_PRIORITY_FEE: overrides the cluster's default (priorityFeeFor). */
  priorityFee?: number;
}

export class BootstrapRefusedError extends Error {
  override name = 'BootstrapRefusedError';
}

/**
 * Makes the platform's on-chain world exist, idempotently: fee payer funded (where a faucet
 * exists), USDC and native mints, and the token accounts of treasury, creator fund and swap pool,
 * seeded on the localnet. Every step checks the chain first, so a rerun changes nothing and a
 * crash midway is finished by the next run. It refuses mainnet-beta outright: it mints.
 */
export async function bootstrapChain(deps: BootstrapDeps, config: BootstrapConfig): Promise<PlatformChain> {
  const cluster = await detectCluster(deps.rpc);
  if (cluster === 'mainnet-beta') {
    throw new BootstrapRefusedError(
      'Refusing to bootstrap on mainnet-beta: the bootstrap creates and mints tokens.',
    );
  }
  const signers = await loadPlatformSigners(deps.wallets, deps.keystore);
  const feePayer = signers.fee_payer;
  const send = (instructions: TransactionInstruction[], extraSigners: Signer[] = []) =>
    sendInstructions(deps.rpc, feePayer, instructions, extraSigners);

  await fundFeePayer(deps, cluster, feePayer.publicKey);

  const usdcMint = await ensureMint(deps, cluster, send, {
    role: 'usdc_mint',
    configured: config.usdcMint ?? defaultUsdcMint(cluster),
    decimals: USDC_DECIMALS,
    authority: signers.usdc_mint_authority.publicKey,
  });
  const nativeMint = await ensureMint(deps, cluster, send, {
    role: 'native_mint',
    configured: config.nativeMint,
    decimals: NATIVE_DECIMALS,
    authority: signers.native_mint_authority.publicKey,
  });
  const nativeMintState = await readMint(deps.rpc, nativeMint);
  const nativeDecimals = nativeMintState?.decimals ?? NATIVE_DECIMALS;

  const wanted: Array<[PublicKey, PublicKey]> = [
    [signers.treasury.publicKey, usdcMint],
    [signers.creator_fund.publicKey, usdcMint],
    [signers.creator_fund.publicKey, nativeMint],
    [signers.pool_authority.publicKey, usdcMint],
    [signers.pool_authority.publicKey, nativeMint],
  ];
  const missing = await missingAccounts(
    deps.rpc,
    wanted.map(([owner, mint]) => associatedTokenAccount(mint, owner)),
  );
  if (missing.size > 0) {
    await send(
      wanted
        .filter(([owner, mint]) => missing.has(associatedTokenAccount(mint, owner).toBase58()))
        .map(([owner, mint]) =>
          createAssociatedTokenAccountIdempotentInstruction(
            feePayer.publicKey,
            associatedTokenAccount(mint, owner),
            owner,
            mint,
          ),
        ),
    );
    deps.log(`created ${missing.size} platform token accounts`);
  }

  const poolUsdcVault = associatedTokenAccount(usdcMint, signers.pool_authority.publicKey);
  const poolNativeVault = associatedTokenAccount(nativeMint, signers.pool_authority.publicKey);
  const privateCluster = cluster === 'localnet' || cluster === 'local-validator';
  const nativeIsOurs = nativeMintState?.authority?.equals(signers.native_mint_authority.publicKey) === true;
  const mintsTestTokens =
    privateCluster &&
    nativeIsOurs &&
    (await readMint(deps.rpc, usdcMint))?.authority?.equals(signers.usdc_mint_authority.publicKey) === true;
  // The native token is ours on any cluster (devnet too): its seeds are minted wherever we hold its
  // authority. USDC only where it is our test USDC; elsewhere (Circle's devnet USDC) it is sent in.
  if (nativeIsOurs) {
    const all: Array<[PublicKey, PublicKey, number, Signer, bigint]> = [
      [
        signers.creator_fund.publicKey,
        nativeMint,
        nativeDecimals,
        signers.native_mint_authority,
        LOCALNET_SEED.creatorFundNative,
      ],
      [
        signers.pool_authority.publicKey,
        usdcMint,
        USDC_DECIMALS,
        signers.usdc_mint_authority,
        LOCALNET_SEED.poolUsdc,
      ],
      [
        signers.pool_authority.publicKey,
        nativeMint,
        nativeDecimals,
        signers.native_mint_authority,
        LOCALNET_SEED.poolNative,
      ],
    ];
    const seeds = all.filter(([, mint]) => mintsTestTokens || !mint.equals(usdcMint));
    for (const [owner, mint, decimals, authority, amount] of seeds) {
      if ((await tokenBalance(deps.rpc, associatedTokenAccount(mint, owner))) > 0n) continue;
      const { blockhash, lastValidBlockHeight } = await deps.rpc.getLatestBlockhash('confirmed');
      const tx = buildMintTo({
        feePayer: feePayer.publicKey,
        recentBlockhash: blockhash,
        mint,
        decimals,
        authority: authority.publicKey,
        to: owner,
        amount,
        createAta: false,
      });
      const signed = signTransaction(tx, [feePayer, authority]);
      await sendAndConfirm(deps.rpc, { ...signed, lastValidBlockHeight }, { commitment: 'confirmed' });
      deps.log(`seeded ${owner.toBase58()} with ${amount} base units of ${mint.toBase58()}`);
    }
  }
  if (!mintsTestTokens && (await tokenBalance(deps.rpc, poolUsdcVault)) === 0n) {
    deps.log(
      `the swap pool's USDC vault ${poolUsdcVault.toBase58()} is empty: swaps quote nothing until USDC of ${usdcMint.toBase58()} is sent to it` +
        (cluster === 'devnet' ? ' (test USDC: https://faucet.circle.com)' : ''),
    );
  }

  return {
    cluster,
    signers,
    usdcMint,
    nativeMint,
    nativeDecimals,
    poolUsdcVault,
    poolNativeVault,
    mintsTestTokens,
    priorityFeeMicroLamports: priorityFeeFor(cluster, config.priorityFee),
  };
}

async function sendInstructions(
  rpc: RpcClient,
  feePayer: Signer,
  instructions: TransactionInstruction[],
  extraSigners: Signer[],
): Promise<string> {
  const { blockhash, lastValidBlockHeight } = await rpc.getLatestBlockhash('confirmed');
  const tx = new Transaction({ feePayer: feePayer.publicKey, recentBlockhash: blockhash }).add(
    ...instructions,
  );
  const signed = signTransaction(tx, [feePayer, ...extraSigners]);
  await sendAndConfirm(rpc, { ...signed, lastValidBlockHeight }, { commitment: 'confirmed' });
  return signed.signature;
}

async function fundFeePayer(deps: BootstrapDeps, cluster: Cluster, feePayer: PublicKey): Promise<void> {
  const { value: lamports } = await deps.rpc.call<{ value: number }>('getBalance', [
    feePayer.toBase58(),
    { commitment: 'confirmed' },
  ]);
  const funding = feePayerFunding(cluster);
  if (lamports >= (funding?.minimum ?? 1)) return;
  const sendIt = (need: number) =>
    new BootstrapRefusedError(
      `The fee payer ${feePayer.toBase58()} has ${lamports} lamports: send it at least ${need / 1e9} SOL` +
        (cluster === 'devnet' || cluster === 'testnet' ? ` (https://faucet.solana.com, ${cluster})` : '') +
        ' and start again.',
    );
  if (!funding) throw sendIt(1_000_000_000);
  let signature: string;
  try {
    signature = await deps.rpc.call<string>('requestAirdrop', [feePayer.toBase58(), funding.airdrop]);
  } catch (error) {
    // A public faucet refuses past its limit (429 or an error): say what to do instead.
    throw Object.assign(sendIt(funding.minimum), { cause: error });
  }
  await waitLanded(deps.rpc, signature);
  deps.log(`airdropped ${funding.airdrop} lamports to the fee payer ${feePayer.toBase58()}`);
}

interface MintPlan {
  role: 'usdc_mint' | 'native_mint';
  /** An address from config; undefined means a mint of our own, keyed by `role`. */
  configured: string | undefined;
  decimals: number;
  authority: PublicKey;
}

async function ensureMint(
  deps: BootstrapDeps,
  cluster: Cluster,
  send: (instructions: TransactionInstruction[], extraSigners?: Signer[]) => Promise<string>,
  plan: MintPlan,
): Promise<PublicKey> {
  if (plan.configured) {
    const address = new PublicKey(plan.configured);
    if (await readMint(deps.rpc, address)) return address;
    if (cluster !== 'localnet') {
      throw new BootstrapRefusedError(
        `The ${plan.role} ${address.toBase58()} does not exist on this cluster.`,
      );
    }
    // Localnet: place the mint at the configured address with our own authority.
    const data = Buffer.alloc(MINT_SIZE);
    MintLayout.encode(
      {
        mintAuthorityOption: 1,
        mintAuthority: plan.authority,
        supply: 0n,
        decimals: plan.decimals,
        isInitialized: true,
        freezeAuthorityOption: 0,
        freezeAuthority: PublicKey.default,
      },
      data,
    );
    const lamports = await deps.rpc.call<number>('getMinimumBalanceForRentExemption', [MINT_SIZE]);
    await deps.rpc.call('localnet_setAccount', [
      address.toBase58(),
      {
        lamports,
        data: [data.toString('base64'), 'base64'],
        owner: TOKEN_PROGRAM_ID.toBase58(),
        executable: false,
      },
    ]);
    deps.log(`placed the ${plan.role} at ${address.toBase58()}`);
    return address;
  }
  const mintSigner = await ensureSigner(deps.wallets, deps.keystore, plan.role);
  if (await readMint(deps.rpc, mintSigner.publicKey)) return mintSigner.publicKey;
  const lamports = await deps.rpc.call<number>('getMinimumBalanceForRentExemption', [MINT_SIZE]);
  const feePayer = (await loadPlatformSigners(deps.wallets, deps.keystore)).fee_payer.publicKey;
  await send(
    [
      SystemProgram.createAccount({
        fromPubkey: feePayer,
        newAccountPubkey: mintSigner.publicKey,
        lamports,
        space: MINT_SIZE,
        programId: TOKEN_PROGRAM_ID,
      }),
      createInitializeMint2Instruction(mintSigner.publicKey, plan.decimals, plan.authority, null),
    ],
    [mintSigner],
  );
  deps.log(`created the ${plan.role} ${mintSigner.publicKey.toBase58()}`);
  return mintSigner.publicKey;
}

type EncodedAccount = { data: [string, string]; owner: string } | null;

async function readMint(
  rpc: RpcClient,
  address: PublicKey,
): Promise<{ decimals: number; authority: PublicKey | undefined } | undefined> {
  const { value } = await rpc.call<{ value: EncodedAccount }>('getAccountInfo', [
    address.toBase58(),
    { encoding: 'base64', commitment: 'confirmed' },
  ]);
  if (!value || value.owner !== TOKEN_PROGRAM_ID.toBase58()) return undefined;
  const data = Buffer.from(value.data[0], 'base64');
  if (data.length !== MINT_SIZE) return undefined;
  const mint = MintLayout.decode(data);
  if (!mint.isInitialized) return undefined;
  return {
    decimals: mint.decimals,
    authority: mint.mintAuthorityOption === 1 ? mint.mintAuthority : undefined,
  };
}

async function missingAccounts(rpc: RpcClient, addresses: PublicKey[]): Promise<Set<string>> {
  const { value } = await rpc.call<{ value: EncodedAccount[] }>('getMultipleAccounts', [
    addresses.map((a) => a.toBase58()),
    { encoding: 'base64', commitment: 'confirmed' },
  ]);
  return new Set(addresses.filter((_, i) => !value[i]).map((a) => a.toBase58()));
}

async function tokenBalance(rpc: RpcClient, account: PublicKey): Promise<bigint> {
  const { value } = await rpc.call<{ value: { amount: string } }>('getTokenAccountBalance', [
    account.toBase58(),
    { commitment: 'confirmed' },
  ]);
  return BigInt(value.amount);
}

async function waitLanded(rpc: RpcClient, signature: string): Promise<void> {
  for (let attempt = 0; attempt < 120; attempt++) {
    const [status] = await rpc.getSignatureStatuses([signature]);
    if (status && status.confirmationStatus !== 'processed') return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`airdrop ${signature} did not confirm`);
}
