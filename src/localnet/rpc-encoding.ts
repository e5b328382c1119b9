import { VersionedTransaction } from '@solana/web3.js';
import bs58 from 'bs58';
import type { BlockHeader } from './block-ledger.js';
import type { AccountView } from './chain.js';
import { parseInstruction } from './instruction-parser.js';
import { decodeMint, decodeTokenAccount, PROGRAM, TOKEN_PROGRAMS, uiTokenAmount } from './programs.js';
import { invalidParams, RpcError } from './rpc-error.js';
import type { TokenBalance, TransactionRecord } from './transaction-store.js';

export type TransactionEncoding = 'json' | 'jsonParsed' | 'base64' | 'base58';
export type AccountEncoding = 'base64' | 'base58' | 'jsonParsed';

/** The getTransaction answer for one record, in the encoding asked for. */
export function encodeTransaction(
  record: TransactionRecord,
  encoding: TransactionEncoding,
  maxSupportedTransactionVersion: number | undefined,
) {
  checkVersion(record, maxSupportedTransactionVersion);
  const wire = Buffer.from(record.wire, 'base64');
  const tx = VersionedTransaction.deserialize(wire);
  const transaction =
    encoding === 'base64'
      ? [record.wire, 'base64']
      : encoding === 'base58'
        ? [bs58.encode(wire), 'base58']
        : encoding === 'jsonParsed'
          ? parsedTransaction(record, tx)
          : jsonTransaction(record, tx);
  return {
    slot: record.slot,
    blockTime: record.blockTime,
    transaction,
    meta: encodeMeta(record, encoding === 'jsonParsed'),
    ...(maxSupportedTransactionVersion === undefined ? {} : { version: record.version }),
  };
}

export type TransactionDetails = 'full' | 'accounts' | 'signatures' | 'none';

/**
 * The getBlock answer, as a validator gives it: with `full` each transaction as getTransaction
 * encodes it (without slot and blockTime); with `accounts` its signatures, its account keys
 * (lookup-table ones included, with signer/writable/source) and the balance part of its meta;
 * with `signatures` the first signature of each; `rewards: false` leaves the field out.
 */
export function encodeBlock(
  header: BlockHeader,
  records: TransactionRecord[],
  options: {
    transactionDetails: TransactionDetails;
    encoding: TransactionEncoding;
    maxSupportedTransactionVersion: number | undefined;
    rewards: boolean;
  },
) {
  const { transactionDetails, encoding, maxSupportedTransactionVersion } = options;
  const details =
    transactionDetails === 'none'
      ? {}
      : transactionDetails === 'signatures'
        ? { signatures: records.map((record) => record.signature) }
        : {
            transactions: records.map((record) => {
              if (transactionDetails === 'full') {
                const { transaction, meta } = encodeTransaction(
                  record,
                  encoding,
                  maxSupportedTransactionVersion,
                );
                return {
                  transaction,
                  meta,
                  ...(maxSupportedTransactionVersion === undefined ? {} : { version: record.version }),
                };
              }
              checkVersion(record, maxSupportedTransactionVersion);
              const tx = VersionedTransaction.deserialize(Buffer.from(record.wire, 'base64'));
              return {
                transaction: {
                  signatures: tx.signatures.map((signature) => bs58.encode(signature)),
                  accountKeys: accountKeysOf(record, tx),
                },
                meta: {
                  err: record.err,
                  status: record.err === null ? { Ok: null } : { Err: record.err },
                  fee: record.fee,
                  preBalances: record.preBalances,
                  postBalances: record.postBalances,
                  preTokenBalances: record.preTokenBalances.map(encodeTokenBalance),
                  postTokenBalances: record.postTokenBalances.map(encodeTokenBalance),
                },
                ...(maxSupportedTransactionVersion === undefined ? {} : { version: record.version }),
              };
            }),
          };
  return {
    blockHeight: header.blockHeight,
    blockTime: header.blockTime,
    blockhash: header.blockhash,
    parentSlot: header.parentSlot,
    previousBlockhash: header.previousBlockhash,
    ...details,
    ...(options.rewards ? { rewards: [] } : {}),
  };
}

function checkVersion(record: TransactionRecord, maxSupportedTransactionVersion: number | undefined) {
  if (record.version !== 'legacy' && maxSupportedTransactionVersion === undefined) {
    throw new RpcError(
      -32015,
      'Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0',
    );
  }
}

function jsonTransaction(record: TransactionRecord, tx: VersionedTransaction) {
  const message = tx.message;
  return {
    signatures: tx.signatures.map((s) => bs58.encode(s)),
    message: {
      accountKeys: message.staticAccountKeys.map((k) => k.toBase58()),
      header: message.header,
      recentBlockhash: message.recentBlockhash,
      instructions: message.compiledInstructions.map((ix) => ({
        programIdIndex: ix.programIdIndex,
        accounts: ix.accountKeyIndexes,
        data: bs58.encode(ix.data),
        stackHeight: null,
      })),
      ...lookupsOf(record, tx),
    },
  };
}

/** v0 messages carry their lookup tables; legacy messages have no such field at all. */
function lookupsOf(record: TransactionRecord, tx: VersionedTransaction) {
  if (record.version === 'legacy') return {};
  return {
    addressTableLookups: tx.message.addressTableLookups.map((l) => ({
      accountKey: l.accountKey.toBase58(),
      writableIndexes: l.writableIndexes,
      readonlyIndexes: l.readonlyIndexes,
    })),
  };
}

/** Every account key with signer, writable and source, as jsonParsed and getBlock `accounts` show them. */
function accountKeysOf(record: TransactionRecord, tx: VersionedTransaction) {
  const message = tx.message;
  const staticCount = message.staticAccountKeys.length;
  const writableLoaded = record.loadedAddresses.writable.length;
  return record.accountKeys.map((pubkey, index) => ({
    pubkey,
    signer: index < message.header.numRequiredSignatures,
    writable: index < staticCount ? message.isAccountWritable(index) : index < staticCount + writableLoaded,
    source: index < staticCount ? 'transaction' : 'lookupTable',
  }));
}

function parsedTransaction(record: TransactionRecord, tx: VersionedTransaction) {
  const message = tx.message;
  return {
    signatures: tx.signatures.map((s) => bs58.encode(s)),
    message: {
      accountKeys: accountKeysOf(record, tx),
      recentBlockhash: message.recentBlockhash,
      instructions: message.compiledInstructions.map((ix) =>
        parsedOrRaw(record.accountKeys, ix.programIdIndex, ix.accountKeyIndexes, ix.data, null),
      ),
      ...lookupsOf(record, tx),
    },
  };
}

function parsedOrRaw(
  keys: string[],
  programIdIndex: number,
  accountIndexes: number[],
  data: Uint8Array,
  stackHeight: number | null,
) {
  const programId = keys[programIdIndex] ?? '';
  const accounts = accountIndexes.map((i) => keys[i] ?? '');
  const parsed = parseInstruction(programId, accounts, data);
  return parsed ? { ...parsed, stackHeight } : { programId, accounts, data: bs58.encode(data), stackHeight };
}

function encodeMeta(record: TransactionRecord, parsed: boolean) {
  return {
    err: record.err,
    status: record.err === null ? { Ok: null } : { Err: record.err },
    fee: record.fee,
    preBalances: record.preBalances,
    postBalances: record.postBalances,
    innerInstructions: record.innerInstructions.map((entry) => ({
      index: entry.index,
      instructions: entry.instructions.map((ix) =>
        parsed
          ? parsedOrRaw(
              record.accountKeys,
              ix.programIdIndex,
              ix.accounts,
              bs58.decode(ix.data),
              ix.stackHeight,
            )
          : ix,
      ),
    })),
    logMessages: record.logMessages,
    preTokenBalances: record.preTokenBalances.map(encodeTokenBalance),
    postTokenBalances: record.postTokenBalances.map(encodeTokenBalance),
    rewards: [],
    loadedAddresses: record.loadedAddresses,
    computeUnitsConsumed: record.computeUnitsConsumed,
  };
}

function encodeTokenBalance(balance: TokenBalance) {
  return {
    accountIndex: balance.accountIndex,
    mint: balance.mint,
    owner: balance.owner,
    programId: balance.programId,
    uiTokenAmount: uiTokenAmount(BigInt(balance.amount), balance.decimals),
  };
}

/** An account in the getAccountInfo shape; jsonParsed falls back to base64 for unknown layouts. */
export function encodeAccount(
  account: AccountView,
  encoding: AccountEncoding,
  mintDecimals: (mint: string) => number,
) {
  const common = {
    executable: account.executable,
    lamports: Number(account.lamports),
    owner: account.owner,
    rentEpoch: Number(account.rentEpoch),
    space: account.data.length,
  };
  if (encoding === 'jsonParsed' && TOKEN_PROGRAMS.has(account.owner)) {
    const program = account.owner === PROGRAM.token ? 'spl-token' : 'spl-token-2022';
    const token = decodeTokenAccount(account.data);
    if (token) {
      const info = {
        isNative: token.isNative,
        mint: token.mint,
        owner: token.owner,
        state: token.state,
        tokenAmount: uiTokenAmount(token.amount, mintDecimals(token.mint)),
        ...(token.delegate ? { delegate: token.delegate } : {}),
      };
      return { ...common, data: { program, parsed: { type: 'account', info }, space: account.data.length } };
    }
    const mint = decodeMint(account.data);
    if (mint) {
      const info = { ...mint, supply: mint.supply.toString() };
      return { ...common, data: { program, parsed: { type: 'mint', info }, space: account.data.length } };
    }
  }
  if (encoding === 'base58') return { ...common, data: [bs58.encode(account.data), 'base58'] };
  return { ...common, data: [Buffer.from(account.data).toString('base64'), 'base64'] };
}

export function accountEncoding(value: unknown): AccountEncoding {
  if (value === undefined) return 'base64';
  if (value === 'base64' || value === 'base58' || value === 'jsonParsed') return value;
  throw invalidParams(`unsupported encoding: ${JSON.stringify(value)}`);
}

export function transactionEncoding(value: unknown): TransactionEncoding {
  if (value === undefined) return 'json';
  if (value === 'json' || value === 'jsonParsed' || value === 'base64' || value === 'base58') return value;
  throw invalidParams(`unsupported encoding: ${JSON.stringify(value)}`);
}
