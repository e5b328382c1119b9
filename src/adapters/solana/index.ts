export {
  ChainError,
  classifyRpcFailure,
  type ChainErrorDetails,
  type ChainErrorKind,
  type JsonRpcErrorObject,
  type RpcFailure,
} from './chain-errors.js';
export {
  confirmMany,
  sendAndConfirm,
  type ConfirmOptions,
  type ConfirmOutcome,
  type Confirmed,
  type SignedForSend,
} from './confirm.js';
export {
  createSignatureWatcher,
  isAlreadyProcessed,
  sendWires,
  type SignatureWatcher,
  type WatcherOptions,
} from './signature-watcher.js';
export { generateWallet, signerFromSeed, type GeneratedWallet, type Signer } from './keypair.js';
export {
  createKeystore,
  DEV_MASTER_KEY_FILE,
  loadOrCreateDevMasterKey,
  parseMasterKey,
  WalletKeyError,
  type Keystore,
} from './keystore.js';
export {
  createRpcClient,
  MAX_SIGNATURES_PER_STATUS_CALL,
  type BatchItem,
  type Commitment,
  type RpcCall,
  type RpcClient,
  type RpcClientOptions,
  type SendOptions,
  type SignatureStatus,
} from './rpc-client.js';
export { MAX_TRANSACTION_BYTES, signTransaction, type SignedTransaction } from './sign.js';
export {
  associatedTokenAccount,
  buildCreateAtas,
  buildMintTo,
  buildTransfer,
  MAX_MEMO_BYTES,
  MEMO_PROGRAM_ID,
  type BuildCreateAtasInput,
  type BuildMintToInput,
  type BuildTransferInput,
  type TransferLeg,
} from './transaction-builder.js';
export {
  bootstrapChain,
  BootstrapRefusedError,
  LOCALNET_SEED,
  MAINNET_USDC_MINT,
  NATIVE_DECIMALS,
  USDC_DECIMALS,
  type BootstrapConfig,
  type BootstrapDeps,
  type PlatformChain,
} from './bootstrap.js';
export { detectCluster, priorityFeeFor, rpcPacingFor, type Cluster, type RpcPacing } from './cluster.js';
export {
  ensureSigner,
  loadPlatformSigners,
  PLATFORM_SIGNER_ROLES,
  type PlatformSigners,
  type PlatformWalletStore,
  type SealedPlatformWallet,
} from './platform-keys.js';
export { fundNative, fundUsdc, FaucetRefusedError } from './faucet.js';
export { pingSolana } from './health-probe.js';
export { createWalletProvisioner } from './custodial-wallets.js';
