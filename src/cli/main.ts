import { parseArgs } from 'node:util';
import { PublicKey } from '@solana/web3.js';
import { associatedTokenAccount, fundUsdc } from '../adapters/solana/index.js';
import { notifyCommitted } from '../app/commit-notifier.js';
import { ACCOUNT_ROLES, type AccountRole } from '../domain/accounts/account.js';
import { createAccount, findByHandle } from '../domain/accounts/accounts.service.js';
import { parseScopes } from '../domain/auth/api-key.js';
import { createApiKey, revokeApiKey } from '../domain/auth/api-keys.service.js';
import { AppError } from '../domain/errors.js';
import { formatMicroUsd, parseUsdToMicro } from '../domain/money/usd.js';
import { withCliContext } from './cli-context.js';
import { fundEpochCommand } from './fund-epoch-command.js';
import { reconcileCommand, reindexCommand } from './indexer-commands.js';
import { reportCommand } from './report-command.js';
import { UsageError } from './usage-error.js';

const USAGE = `Usage: npm run cli -- <command>

Commands:
  accounts create <handle> [--display-name NAME] [--role user|finance|admin]
  keys create <handle> [--scopes read,post,engage,send]   prints the key once
  keys list <handle>
  keys revoke <id>
  fund <handle|address> <usd>                            mint localnet USDC (dev faucet)

Indexer (ClickHouse):
  reconcile --since YYYY-MM-DD   re-check every outbox transaction created since that day (UTC)
                                 against the chain; progress on stderr, counts per status at the end
  reindex                        rebuild ClickHouse from Postgres and the chain: ship every domain
                                 event and ledger leg again, clear and re-check every verdict. The
                                 tables are ReplacingMergeTrees keyed by id, so rows shipped again
                                 replace the old ones and nothing counts twice. Verdicts come back
                                 at 'confirmed'; the running indexer re-checks them at 'finalized'.
  report --date YYYY-MM-DD       the day's ledger total vs chain total, counts per status and the
                                 exception list (by ledger day, UTC)
  fund-epoch run [--epoch START]  pay one creator-fund epoch now (default: the last one that
                                 ended; START is its ISO start, on an epoch boundary) and wait for
                                 its batches to confirm; run again after a crash, it finishes the
                                 same plan and pays nobody twice

Examples:
  npm run cli -- reconcile --since 2026-11-01
  npm run cli -- reindex
  npm run cli -- report --date 2026-11-22

While \`npm start\` runs with the same DATA_DIR, commands use its Postgres and chain (stack.json);
otherwise they start the embedded services for the duration of the command. The indexer commands
also need ClickHouse: the embedded one (chdb) opens its folder from one process only, so they
cannot run while \`npm start\` holds it. Stop \`npm start\` first, or run every process against a
ClickHouse server (CLICKHOUSE_URL).`;

async function main(argv: string[]): Promise<number> {
  const [group, ...rest] = argv;
  const command = group === 'accounts' || group === 'keys' ? `${group} ${rest.shift() ?? ''}` : group;
  switch (command) {
    case 'accounts create':
      return accountsCreate(rest);
    case 'keys create':
      return keysCreate(rest);
    case 'keys list':
      return keysList(rest);
    case 'keys revoke':
      return keysRevoke(rest);
    case 'fund':
      return fund(rest);
    case 'reconcile':
      return reconcileCommand(rest);
    case 'reindex':
      return reindexCommand(rest);
    case 'report':
      return reportCommand(rest);
    case 'fund-epoch':
      return fundEpochCommand(rest);
    case undefined:
    case 'help':
    case '--help':
      console.log(USAGE);
      return command === undefined ? 2 : 0;
    default:
      throw new UsageError(`Unknown command: ${command}`);
  }
}

async function accountsCreate(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { 'display-name': { type: 'string' }, role: { type: 'string', default: 'user' } },
  });
  const [handle] = positionals;
  if (!handle || positionals.length !== 1) throw new UsageError('accounts create takes one handle');
  if (!ACCOUNT_ROLES.includes(values.role as AccountRole)) {
    throw new UsageError(`--role must be one of ${ACCOUNT_ROLES.join(', ')}`);
  }
  return withCliContext(async (ctx) => {
    const account = await createAccount(ctx, {
      handle,
      displayName: values['display-name'],
      role: values.role as AccountRole,
    });
    console.log(
      `Created @${account.handle} (${account.role})\n  id      ${account.id}\n  wallet  ${account.walletAddress}\n` +
        `Create its API key with: npm run cli -- keys create ${account.handle}`,
    );
    return 0;
  });
}

async function keysCreate(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { scopes: { type: 'string' } },
  });
  const [handle] = positionals;
  if (!handle || positionals.length !== 1) throw new UsageError('keys create takes one handle');
  let scopes;
  try {
    scopes = values.scopes === undefined ? undefined : parseScopes(values.scopes);
  } catch (error) {
    throw new UsageError(`--scopes: ${(error as Error).message}`);
  }
  return withCliContext(async (ctx) => {
    const account = await findByHandle(ctx.accounts, handle);
    const { key, info } = await createApiKey(ctx.apiKeys, account.id, scopes);
    console.log(
      `API key ${info.id} for @${account.handle} (scopes: ${info.scopes.join(', ')})\n\n  ${key}\n\n` +
        'This is the only time the key is shown: store it now.',
    );
    return 0;
  });
}

async function keysList(args: string[]): Promise<number> {
  const [handle] = args;
  if (!handle || args.length !== 1) throw new UsageError('keys list takes one handle');
  return withCliContext(async (ctx) => {
    const account = await findByHandle(ctx.accounts, handle);
    const keys = await ctx.apiKeys.list(account.id);
    if (keys.length === 0) console.log(`@${account.handle} has no API keys`);
    for (const key of keys) {
      const state = key.revokedAt ? `revoked ${key.revokedAt.toISOString()}` : 'active';
      const used = key.lastUsedAt ? key.lastUsedAt.toISOString() : 'never';
      console.log(
        `${key.id}  ${state.padEnd(32)}  scopes ${key.scopes.join(',').padEnd(22)}  created ${key.createdAt.toISOString()}  last used ${used}`,
      );
    }
    return 0;
  });
}

async function keysRevoke(args: string[]): Promise<number> {
  const [id] = args;
  if (!id || args.length !== 1) throw new UsageError('keys revoke takes one key id');
  return withCliContext(async (ctx) => {
    await revokeApiKey(ctx.apiKeys, id, null);
    notifyCommitted(ctx, { kind: 'key-revoked' }); // running API processes drop the key from their caches
    console.log(`Revoked API key ${id}`);
    return 0;
  });
}

async function fund(args: string[]): Promise<number> {
  const [target, usd] = args;
  if (!target || !usd || args.length !== 2) throw new UsageError('fund takes <handle|address> <usd>');
  const amountMicro = parseUsdToMicro(usd);
  return withCliContext(async (ctx) => {
    const account = isAddress(target)
      ? await ctx.accounts.byWalletAddress(target)
      : await findByHandle(ctx.accounts, target);
    const address = account?.walletAddress ?? target;
    const platform = await ctx.bootstrapChain();
    const { signature } = await fundUsdc(ctx.rpc, platform, address, amountMicro);
    if (account) {
      // The ledger learns of the money as a deposit keyed by its signature, so the indexer's deposit
      // detection (which also keys by signature) can never credit it a second time.
      await ctx.ledger.record({
        kind: 'deposit',
        idempotencyKey: `deposit:${signature}`,
        legs: [
          { account: { kind: 'external' }, units: -amountMicro, counts: 'none' },
          { account: { kind: 'user', accountId: account.id }, units: amountMicro, counts: 'none' },
        ],
      });
    }
    const tokenAccount = associatedTokenAccount(platform.usdcMint, new PublicKey(address));
    const balance = await ctx.rpc.call<{ value: { amount: string } }>('getTokenAccountBalance', [
      tokenAccount.toBase58(),
    ]);
    console.log(
      `Funded ${target} with $${formatMicroUsd(amountMicro)} USDC\n` +
        `  signature  ${signature}\n` +
        `  balance    $${formatMicroUsd(BigInt(balance.value.amount))} in ${tokenAccount.toBase58()}` +
        (account ? `\n  ledger     deposit credited to @${account.handle}` : ''),
    );
    return 0;
  });
}

/** A base58 address is 32-44 characters; a handle is at most 20, so the two never collide. */
function isAddress(text: string): boolean {
  return /^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(text);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) {
      console.error(`${error.message}\n\n${USAGE}`);
      process.exit(2);
    }
    // Expected refusals read as one line; anything else shows its stack for a bug report.
    const expected =
      error instanceof AppError ||
      (error instanceof Error &&
        /Refused|Config|WalletKey|ClickHouseFolderBusy|EpochNotReady/.test(error.name));
    console.error(expected ? error.message : error);
    process.exit(1);
  },
);
