import bs58 from 'bs58';
import { PROGRAM, TOKEN_PROGRAMS, uiTokenAmount } from './programs.js';

/** An instruction as `jsonParsed` shows it when the program is known. */
export interface ParsedInstruction {
  program: string;
  programId: string;
  parsed: unknown;
}

/**
 * Decodes the instructions Ledgerfeed and wallets use (SPL Token transfers and mints, ATA
 * creation, System transfers, Memo). Anything else stays in its raw form, as a validator leaves
 * programs it has no parser for.
 */
export function parseInstruction(
  programId: string,
  accounts: string[],
  data: Uint8Array,
): ParsedInstruction | undefined {
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (programId === PROGRAM.memo || programId === PROGRAM.memoV1) {
    return { program: 'spl-memo', programId, parsed: bytes.toString('utf8') };
  }
  if (TOKEN_PROGRAMS.has(programId)) {
    const parsed = parseToken(accounts, bytes);
    return parsed === undefined
      ? undefined
      : { program: programId === PROGRAM.token ? 'spl-token' : 'spl-token-2022', programId, parsed };
  }
  if (programId === PROGRAM.system) {
    const parsed = parseSystem(accounts, bytes);
    return parsed === undefined ? undefined : { program: 'system', programId, parsed };
  }
  if (programId === PROGRAM.associatedToken) {
    const type =
      bytes.length === 0 || bytes[0] === 0 ? 'create' : bytes[0] === 1 ? 'createIdempotent' : undefined;
    if (!type) return undefined;
    const [source, account, wallet, mint, systemProgram, tokenProgram] = accounts;
    return {
      program: 'spl-associated-token-account',
      programId,
      parsed: { type, info: { source, account, wallet, mint, systemProgram, tokenProgram } },
    };
  }
  return undefined;
}

function parseToken(accounts: string[], data: Buffer): unknown {
  const tag = data[0] ?? -1;
  const amount = () => data.readBigUInt64LE(1);
  switch (tag) {
    case 3: {
      const [source, destination, authority] = accounts;
      return { type: 'transfer', info: { source, destination, authority, amount: amount().toString() } };
    }
    case 12: {
      const [source, mint, destination, authority] = accounts;
      return {
        type: 'transferChecked',
        info: { source, mint, destination, authority, tokenAmount: uiTokenAmount(amount(), data[9] ?? 0) },
      };
    }
    case 7: {
      const [mint, account, mintAuthority] = accounts;
      return { type: 'mintTo', info: { mint, account, mintAuthority, amount: amount().toString() } };
    }
    case 14: {
      const [mint, account, mintAuthority] = accounts;
      return {
        type: 'mintToChecked',
        info: { mint, account, mintAuthority, tokenAmount: uiTokenAmount(amount(), data[9] ?? 0) },
      };
    }
    case 8: {
      const [account, mint, authority] = accounts;
      return { type: 'burn', info: { account, mint, authority, amount: amount().toString() } };
    }
    case 15: {
      const [account, mint, authority] = accounts;
      return {
        type: 'burnChecked',
        info: { account, mint, authority, tokenAmount: uiTokenAmount(amount(), data[9] ?? 0) },
      };
    }
    case 18: {
      const [account, mint] = accounts;
      return {
        type: 'initializeAccount3',
        info: { account, mint, owner: bs58.encode(data.subarray(1, 33)) },
      };
    }
    case 22:
      return { type: 'initializeImmutableOwner', info: { account: accounts[0] } };
    case 21:
      return { type: 'getAccountDataSize', info: { mint: accounts[0] } };
    default:
      return undefined;
  }
}

function parseSystem(accounts: string[], data: Buffer): unknown {
  if (data.length < 4) return undefined;
  const tag = data.readUInt32LE(0);
  if (tag === 2 && data.length >= 12) {
    const [source, destination] = accounts;
    return { type: 'transfer', info: { source, destination, lamports: Number(data.readBigUInt64LE(4)) } };
  }
  if (tag === 0 && data.length >= 52) {
    const [source, newAccount] = accounts;
    return {
      type: 'createAccount',
      info: {
        source,
        newAccount,
        lamports: Number(data.readBigUInt64LE(4)),
        space: Number(data.readBigUInt64LE(12)),
        owner: bs58.encode(data.subarray(20, 52)),
      },
    };
  }
  if (tag === 8 && data.length >= 12) {
    return { type: 'allocate', info: { account: accounts[0], space: Number(data.readBigUInt64LE(4)) } };
  }
  if (tag === 1 && data.length >= 36) {
    return { type: 'assign', info: { account: accounts[0], owner: bs58.encode(data.subarray(4, 36)) } };
  }
  return undefined;
}
