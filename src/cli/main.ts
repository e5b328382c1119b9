import { PublicKey } from '@solana/web3.js';
import { createDb, migratePostgres } from '../adapters/postgres/index.js';
import {
  associatedTokenAccount,
  bootstrapChain,
  createKeystore,
  createRpcClient,
  fundUsdc,
} from '../adapters/solana/index.js';
import { resolveMasterKey } from '../app/master-key.js';
import { readConfig } from '../config/index.js';
import { startDevstack } from '../devstack/index.js';
import { AppError } from '../domain/errors.js';
import { formatMicroUsd, parseUsdToMicro } from '../domain/money/usd.js';
import { createLogger } from '../logger.js';

const USAGE = `Usage: npm run cli -- <command>

Commands:
  fund <address> <usd>   mint localnet USDC into the address's USDC account (dev faucet)

While \`npm start\` runs with the same DATA_DIR, commands use its Postgres and chain (stack.json);
otherwise they start the embedded services for the duration of the command.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  switch (command) {
    case 'fund':
      return fund(args);
    case undefined:
    case 'help':
    case '--help':
      console.log(USAGE);
      return command === undefined ? 2 : 0;
    default:
      console.error(`Unknown command: ${command}\n\n${USAGE}`);
      return 2;
  }
}

async function fund(args: string[]): Promise<number> {
  const [address, usd] = args;
  if (!address || !usd || args.length !== 2) {
    console.error(
      'Usage: npm run cli -- fund <address> <usd>   (accounts by handle arrive with the accounts issue)',
    );
    return 2;
  }
  const amountMicro = parseUsdToMicro(usd);
  const config = readConfig();
  const logger = createLogger(config);
  // No ClickHouse: a running `npm start` holds the chdb folder, and funding does not need it.
  const stack = await startDevstack(config, { persistent: true, clickhouse: false });
  const db = createDb(stack.postgres.url, { max: 2 });
  try {
    await migratePostgres(db);
    const rpc = createRpcClient(stack.solana.url);
    const keystore = createKeystore(resolveMasterKey(config, logger));
    const platform = await bootstrapChain(
      { rpc, db, keystore, log: (message) => logger.info(`bootstrap: ${message}`) },
      { usdcMint: config.USDC_MINT, nativeMint: config.NATIVE_MINT },
    );
    const { signature } = await fundUsdc(rpc, platform, address, amountMicro);
    const account = associatedTokenAccount(platform.usdcMint, new PublicKey(address));
    const balance = await rpc.call<{ value: { amount: string } }>('getTokenAccountBalance', [
      account.toBase58(),
    ]);
    console.log(
      `Funded ${address} with $${formatMicroUsd(amountMicro)} USDC\n` +
        `  signature  ${signature}\n` +
        `  balance    $${formatMicroUsd(BigInt(balance.value.amount))} in ${account.toBase58()}`,
    );
    return 0;
  } finally {
    await db.destroy();
    await stack.stop();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    // Expected refusals read as one line; anything else shows its stack for a bug report.
    const expected =
      error instanceof AppError || (error instanceof Error && /Refused|Config/.test(error.name));
    console.error(expected ? error.message : error);
    process.exit(1);
  },
);
