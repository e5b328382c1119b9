import bs58 from 'bs58';
import { addressBytes, reachesCommitment, type Commitment, type LocalChain } from './chain.js';
import { decodeMint, decodeTokenAccount, uiTokenAmount } from './programs.js';
import {
  accountEncoding,
  encodeAccount,
  encodeBlock,
  encodeTransaction,
  transactionEncoding,
  type TransactionDetails,
} from './rpc-encoding.js';
import { invalidParams, RPC_CODES, RpcError } from './rpc-error.js';

/** Reported by getVersion: the RPC surface follows Agave 2.1. */
const SOLANA_CORE_VERSION = '2.1.0';
const MAX_SIGNATURES_FOR_ADDRESS = 1000;
const MAX_MULTIPLE_ACCOUNTS = 100;
const MAX_SIGNATURE_STATUSES = 256;
/** getBlocks' widest range and getBlocksWithLimit's largest limit, as on a validator. */
const MAX_GET_BLOCKS_RANGE = 500_000;

type Params = readonly unknown[];
type Handler = (params: Params) => unknown;

/**
 * The methods that change nothing: the only ones a web page may call (rpc-server.ts refuses the
 * rest to a request a browser could have sent). An allow-list, so a method added to the table
 * below is refused to browsers until someone decides it is a read. simulateTransaction runs a
 * transaction against a copy and keeps nothing.
 */
export const READ_METHODS: ReadonlySet<string> = new Set([
  'getHealth',
  'getVersion',
  'getGenesisHash',
  'getSlot',
  'getBlockHeight',
  'getTransactionCount',
  'getBlock',
  'getBlocks',
  'getBlocksWithLimit',
  'getFirstAvailableBlock',
  'getEpochInfo',
  'getLatestBlockhash',
  'isBlockhashValid',
  'getMinimumBalanceForRentExemption',
  'simulateTransaction',
  'getSignatureStatuses',
  'getTransaction',
  'getSignaturesForAddress',
  'getAccountInfo',
  'getMultipleAccounts',
  'getBalance',
  'getTokenAccountBalance',
  'getTokenAccountsByOwner',
  'localnet_getInfo',
]);

/** The JSON-RPC methods of the localnet, by name; each takes the raw `params` array. */
export function createRpcMethods(chain: LocalChain): Record<string, Handler> {
  const context = () => ({ context: { slot: chain.slot, apiVersion: SOLANA_CORE_VERSION } });
  const withContext = (value: unknown) => ({ ...context(), value });
  const mintDecimals = (mint: string) => {
    const account = chain.getAccount(mint);
    return account ? (decodeMint(account.data)?.decimals ?? 0) : 0;
  };

  return {
    getHealth: () => 'ok',
    getVersion: () => ({ 'solana-core': SOLANA_CORE_VERSION, 'feature-set': 0 }),
    getGenesisHash: () => chain.genesisHash,
    // Asked for no commitment, the newest (processed), as this localnet always answered.
    getSlot: (params) => chain.slotAt(accountCommitment(objectParam(params, 0).commitment)),
    getBlockHeight: (params) => chain.blockHeightAt(accountCommitment(objectParam(params, 0).commitment)),
    getBlock: (params) => {
      const slot = slotParam(params, 0, 'slot');
      const config = typeof params[1] === 'string' ? { encoding: params[1] } : objectParam(params, 1);
      const commitment = readCommitment(config.commitment);
      const maxVersion = config.maxSupportedTransactionVersion;
      if (maxVersion !== undefined && maxVersion !== 0)
        throw invalidParams('maxSupportedTransactionVersion must be 0');
      const { header, transactions } = chain.block(slot, commitment);
      return encodeBlock(header, transactions, {
        transactionDetails: transactionDetails(config.transactionDetails),
        encoding: transactionEncoding(config.encoding),
        maxSupportedTransactionVersion: maxVersion,
        rewards: config.rewards !== false,
      });
    },
    getBlocks: (params) => {
      const start = slotParam(params, 0, 'start_slot');
      // The end slot is optional: the config may take its place.
      const hasEnd = typeof params[1] === 'number';
      const end = hasEnd ? slotParam(params, 1, 'end_slot') : undefined;
      const commitment = readCommitment(objectParam(params, hasEnd ? 2 : 1).commitment);
      if (end !== undefined && end - start > MAX_GET_BLOCKS_RANGE) {
        throw invalidParams(`Slot range too large; max ${MAX_GET_BLOCKS_RANGE}`);
      }
      if (end !== undefined && end < start) return [];
      return chain.blockSlots(start, end, commitment, MAX_GET_BLOCKS_RANGE + 1);
    },
    getBlocksWithLimit: (params) => {
      const start = slotParam(params, 0, 'start_slot');
      const limit = slotParam(params, 1, 'limit');
      if (limit > MAX_GET_BLOCKS_RANGE) throw invalidParams(`Limit too large; max ${MAX_GET_BLOCKS_RANGE}`);
      const commitment = readCommitment(objectParam(params, 2).commitment);
      return chain.blockSlots(start, undefined, commitment, limit);
    },
    getFirstAvailableBlock: () => chain.firstAvailableBlock(),
    getTransactionCount: () => chain.transactionCount,
    getEpochInfo: () => ({
      absoluteSlot: chain.slot,
      blockHeight: chain.blockHeight,
      epoch: chain.epoch,
      slotIndex: chain.slot % chain.slotsPerEpoch,
      slotsInEpoch: chain.slotsPerEpoch,
      transactionCount: chain.transactionCount,
    }),
    getLatestBlockhash: () => withContext(chain.latestBlockhash()),
    isBlockhashValid: (params) => withContext(chain.isBlockhashValid(stringParam(params, 0, 'blockhash'))),
    getMinimumBalanceForRentExemption: (params) => {
      const length = params[0] ?? 0;
      if (typeof length !== 'number' || !Number.isInteger(length) || length < 0) {
        throw invalidParams('data length must be a non-negative integer');
      }
      return Number(chain.minimumBalanceForRentExemption(length));
    },

    sendTransaction: (params) => {
      const config = objectParam(params, 1);
      const wire = decodeWire(stringParam(params, 0, 'transaction'), config.encoding ?? 'base58');
      return chain.submit(wire, { skipPreflight: config.skipPreflight === true });
    },
    simulateTransaction: (params) => {
      const config = objectParam(params, 1);
      const wire = decodeWire(stringParam(params, 0, 'transaction'), config.encoding ?? 'base58');
      const result = chain.simulate(wire, {
        sigVerify: config.sigVerify === true,
        replaceRecentBlockhash: config.replaceRecentBlockhash === true,
      });
      return withContext({ ...result, accounts: null, returnData: null, innerInstructions: null });
    },
    requestAirdrop: (params) => {
      const address = stringParam(params, 0, 'pubkey');
      addressBytes(address);
      const lamports = params[1];
      if (typeof lamports !== 'number' || !Number.isSafeInteger(lamports) || lamports <= 0) {
        throw invalidParams('lamports must be a positive integer');
      }
      return chain.airdrop(address, BigInt(lamports));
    },

    getSignatureStatuses: (params) => {
      const signatures = params[0];
      if (!Array.isArray(signatures) || signatures.some((s) => typeof s !== 'string')) {
        throw invalidParams('expected an array of signatures');
      }
      if (signatures.length > MAX_SIGNATURE_STATUSES) {
        throw invalidParams(`too many signatures (maximum ${MAX_SIGNATURE_STATUSES})`);
      }
      return withContext(
        (signatures as string[]).map((signature) => {
          const status = chain.status(signature);
          return status && { ...status, status: status.err === null ? { Ok: null } : { Err: status.err } };
        }),
      );
    },
    getTransaction: (params) => {
      const signature = stringParam(params, 0, 'signature');
      const config = typeof params[1] === 'string' ? { encoding: params[1] } : objectParam(params, 1);
      const commitment = readCommitment(config.commitment);
      const record = chain.store.get(signature);
      if (!record || !reachesCommitment(chain.commitmentOf(record), commitment)) return null;
      const maxVersion = config.maxSupportedTransactionVersion;
      if (maxVersion !== undefined && maxVersion !== 0)
        throw invalidParams('maxSupportedTransactionVersion must be 0');
      return encodeTransaction(record, transactionEncoding(config.encoding), maxVersion);
    },
    getSignaturesForAddress: (params) => {
      const address = stringParam(params, 0, 'address');
      addressBytes(address);
      const config = objectParam(params, 1);
      const commitment = readCommitment(config.commitment);
      const limit = config.limit ?? MAX_SIGNATURES_FOR_ADDRESS;
      if (
        typeof limit !== 'number' ||
        !Number.isInteger(limit) ||
        limit < 1 ||
        limit > MAX_SIGNATURES_FOR_ADDRESS
      ) {
        throw invalidParams(`limit must be an integer from 1 to ${MAX_SIGNATURES_FOR_ADDRESS}`);
      }
      const records = chain.store.forAddress(address, {
        before: optionalString(config.before, 'before'),
        until: optionalString(config.until, 'until'),
        limit,
        accept: (record) => reachesCommitment(chain.commitmentOf(record), commitment),
      });
      return records.map((record) => ({
        signature: record.signature,
        slot: record.slot,
        err: record.err,
        memo: record.memo,
        blockTime: record.blockTime,
        confirmationStatus: chain.commitmentOf(record),
      }));
    },

    getAccountInfo: (params) => {
      const address = stringParam(params, 0, 'pubkey');
      const config = objectParam(params, 1);
      const encoding = accountEncoding(config.encoding);
      const account = chain.getAccount(address, accountCommitment(config.commitment));
      return withContext(account && encodeAccount(account, encoding, mintDecimals));
    },
    getMultipleAccounts: (params) => {
      const addresses = params[0];
      if (!Array.isArray(addresses) || addresses.some((a) => typeof a !== 'string')) {
        throw invalidParams('expected an array of addresses');
      }
      if (addresses.length > MAX_MULTIPLE_ACCOUNTS)
        throw invalidParams(`too many accounts (maximum ${MAX_MULTIPLE_ACCOUNTS})`);
      const config = objectParam(params, 1);
      const encoding = accountEncoding(config.encoding);
      const commitment = accountCommitment(config.commitment);
      return withContext(
        (addresses as string[]).map((address) => {
          const account = chain.getAccount(address, commitment);
          return account && encodeAccount(account, encoding, mintDecimals);
        }),
      );
    },
    getBalance: (params) => {
      const commitment = accountCommitment(objectParam(params, 1).commitment);
      return withContext(
        Number(chain.getAccount(stringParam(params, 0, 'pubkey'), commitment)?.lamports ?? 0n),
      );
    },
    getTokenAccountBalance: (params) => {
      const commitment = accountCommitment(objectParam(params, 1).commitment);
      const account = chain.getAccount(stringParam(params, 0, 'pubkey'), commitment);
      const token = account && decodeTokenAccount(account.data);
      if (!token) throw invalidParams('not a Token account');
      return withContext(uiTokenAmount(token.amount, mintDecimals(token.mint)));
    },
    getTokenAccountsByOwner: (params) => {
      const owner = stringParam(params, 0, 'owner');
      addressBytes(owner);
      const filter = objectParam(params, 1);
      const mint = optionalString(filter.mint, 'mint');
      const programId = optionalString(filter.programId, 'programId');
      if ((mint === undefined) === (programId === undefined))
        throw invalidParams('expected exactly one of mint or programId');
      const config = objectParam(params, 2);
      const encoding = accountEncoding(config.encoding);
      const commitment = accountCommitment(config.commitment);
      return withContext(
        chain.tokenAccountsByOwner(owner, { mint, programId }, commitment).map(({ address, account }) => ({
          pubkey: address,
          account: encodeAccount(account, encoding, mintDecimals),
        })),
      );
    },

    /**
     * Localnet only, for tests: block faults. `{ skipSlots: n }` the next n slots produce no block;
     * `{ emptySlots: n }` n empty blocks at once (a warp); `{ unavailableReads: n }` every block
     * answers -32004 to its first n getBlock reads (0: off); `{ fork: depth }` the newest `depth`
     * unfinalized blocks are dropped with their transactions and replaced; `{ pruneBelow: slot }`
     * history below a finalized slot is gone. Answers the slots after the change.
     */
    localnet_blockFaults: (params) => {
      const faults = objectParam(params, 0);
      const count = (name: string) => {
        const value = faults[name];
        if (value === undefined) return undefined;
        if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
          throw invalidParams(`${name} must be a non-negative integer`);
        return value;
      };
      const skipSlots = count('skipSlots');
      const unavailableReads = count('unavailableReads');
      const emptySlots = count('emptySlots');
      const fork = count('fork');
      const pruneBelow = count('pruneBelow');
      chain.setBlockFaults({ skipSlots, unavailableReads });
      if (emptySlots !== undefined) chain.warp(emptySlots);
      const keptSlot = fork === undefined ? undefined : chain.fork(fork);
      if (pruneBelow !== undefined) chain.pruneBelow(pruneBelow);
      return {
        processed: chain.slotAt('processed'),
        confirmed: chain.slotAt('confirmed'),
        finalized: chain.slotAt('finalized'),
        firstAvailableBlock: chain.firstAvailableBlock(),
        ...(keptSlot === undefined ? {} : { forkedAfter: keptSlot }),
      };
    },

    /** Tells clients this is Ledgerfeed's embedded localnet (privileged methods exist here). */
    localnet_getInfo: () => ({ localnet: true, slotMs: chain.slotMs }),

    /**
     * Localnet only (like anvil_setCode): place an account as is. The bootstrap uses it to put
     * our USDC mint at the mainnet USDC address, so mint config is the same on every cluster.
     */
    localnet_setAccount: (params) => {
      const address = stringParam(params, 0, 'pubkey');
      const account = objectParam(params, 1);
      const [data, dataEncoding] = (Array.isArray(account.data) ? account.data : ['', 'base64']) as unknown[];
      if (typeof data !== 'string' || dataEncoding !== 'base64')
        throw invalidParams('data must be [base64, "base64"]');
      if (typeof account.lamports !== 'number' || typeof account.owner !== 'string') {
        throw invalidParams('expected { lamports, data, owner, executable }');
      }
      addressBytes(account.owner);
      chain.setAccount(address, {
        lamports: BigInt(account.lamports),
        data: Buffer.from(data, 'base64'),
        owner: account.owner,
        executable: account.executable === true,
      });
      return null;
    },
  };
}

/**
 * Account reads (getAccountInfo, getBalance, getTokenAccountBalance, ...) show the state at the
 * commitment asked for. Asked for none, the newest (`processed`), as this localnet always answered
 * (a validator defaults to `finalized`: ~13 s behind here, which every caller that asks nothing
 * would have to wait out).
 */
function accountCommitment(value: unknown): Commitment {
  if (value === undefined || value === null) return 'processed';
  if (value === 'processed' || value === 'confirmed' || value === 'finalized') return value;
  throw invalidParams(`unknown commitment: ${JSON.stringify(value)}`);
}

/** History lookups default to finalized and refuse processed, as a validator's do. */
function readCommitment(value: unknown): Commitment {
  if (value === undefined) return 'finalized';
  if (value === 'confirmed' || value === 'finalized') return value;
  if (value === 'processed') {
    throw new RpcError(RPC_CODES.invalidParams, 'Method does not support commitment below `confirmed`');
  }
  throw invalidParams(`unknown commitment: ${JSON.stringify(value)}`);
}

function transactionDetails(value: unknown): TransactionDetails {
  if (value === undefined) return 'full';
  if (value === 'full' || value === 'accounts' || value === 'signatures' || value === 'none') return value;
  throw invalidParams(`unknown transactionDetails: ${JSON.stringify(value)}`);
}

function slotParam(params: Params, index: number, name: string): number {
  const value = params[index];
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    throw invalidParams(`expected ${name} (a slot) at position ${index}`);
  return value;
}

function stringParam(params: Params, index: number, name: string): string {
  const value = params[index];
  if (typeof value !== 'string' || value.length === 0)
    throw invalidParams(`expected ${name} (a string) at position ${index}`);
  return value;
}

function optionalString(value: unknown, name: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalidParams(`${name} must be a string`);
  return value;
}

function objectParam(params: Params, index: number): Record<string, unknown> {
  const value = params[index];
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw invalidParams(`expected a config object at position ${index}`);
  return value as Record<string, unknown>;
}

function decodeWire(encoded: string, encoding: unknown): Uint8Array {
  try {
    if (encoding === 'base64') return Buffer.from(encoded, 'base64');
    if (encoding === 'base58') return bs58.decode(encoded);
  } catch {
    throw invalidParams(`transaction is not valid ${String(encoding)}`);
  }
  throw invalidParams(`unsupported encoding: ${String(encoding)}`);
}
