import bs58 from 'bs58';

/** Program ids the localnet knows by name (all built into litesvm 1.5.0). */
export const PROGRAM = {
  system: '11111111111111111111111111111111',
  token: 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
  token2022: 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb',
  associatedToken: 'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL',
  memo: 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr',
  memoV1: 'Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo',
  computeBudget: 'ComputeBudget111111111111111111111111111111',
  addressLookupTable: 'AddressLookupTab1e1111111111111111111111111',
} as const;

export const TOKEN_PROGRAMS: ReadonlySet<string> = new Set([PROGRAM.token, PROGRAM.token2022]);

/** Base layout shared by SPL Token and Token-2022 (extensions follow byte 165 / 82). */
const TOKEN_ACCOUNT_SIZE = 165;
const MINT_SIZE = 82;

export interface TokenAccountState {
  mint: string;
  owner: string;
  amount: bigint;
  delegate: string | null;
  state: 'uninitialized' | 'initialized' | 'frozen';
  isNative: boolean;
}

export interface MintState {
  mintAuthority: string | null;
  supply: bigint;
  decimals: number;
  isInitialized: boolean;
  freezeAuthority: string | null;
}

const STATES = ['uninitialized', 'initialized', 'frozen'] as const;

/**
 * A token account's balance fields, or undefined for anything else. Token-2022 mints can be
 * longer than 165 bytes too; the account-type byte at 165 tells them apart (2 = account).
 */
export function decodeTokenAccount(data: Uint8Array): TokenAccountState | undefined {
  if (data.length < TOKEN_ACCOUNT_SIZE) return undefined;
  if (data.length > TOKEN_ACCOUNT_SIZE && data[TOKEN_ACCOUNT_SIZE] !== 2) return undefined;
  const view = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const state = STATES[view[108] ?? 0] ?? 'uninitialized';
  if (state === 'uninitialized') return undefined;
  return {
    mint: bs58.encode(view.subarray(0, 32)),
    owner: bs58.encode(view.subarray(32, 64)),
    amount: view.readBigUInt64LE(64),
    delegate: view.readUInt32LE(72) === 1 ? bs58.encode(view.subarray(76, 108)) : null,
    state,
    isNative: view.readUInt32LE(109) === 1,
  };
}

export function decodeMint(data: Uint8Array): MintState | undefined {
  // 82 bytes: a plain mint. Longer: a Token-2022 mint with extensions, account-type byte 1 at 165.
  const isMint =
    data.length === MINT_SIZE || (data.length > TOKEN_ACCOUNT_SIZE && data[TOKEN_ACCOUNT_SIZE] === 1);
  if (!isMint) return undefined;
  const view = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (view[45] !== 1) return undefined;
  return {
    mintAuthority: view.readUInt32LE(0) === 1 ? bs58.encode(view.subarray(4, 36)) : null,
    supply: view.readBigUInt64LE(36),
    decimals: view[44] ?? 0,
    isInitialized: true,
    freezeAuthority: view.readUInt32LE(46) === 1 ? bs58.encode(view.subarray(50, 82)) : null,
  };
}

/** The `uiTokenAmount` object of RPC answers; uiAmount is a float by the RPC's own definition. */
export function uiTokenAmount(amount: bigint, decimals: number) {
  const scale = 10n ** BigInt(decimals);
  const whole = amount / scale;
  const fraction = (amount % scale).toString().padStart(decimals, '0').replace(/0+$/, '');
  const uiAmountString = fraction ? `${whole}.${fraction}` : `${whole}`;
  return { amount: amount.toString(), decimals, uiAmount: Number(uiAmountString), uiAmountString };
}
