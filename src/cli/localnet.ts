import path from 'node:path';
import { readConfig } from '../config/index.js';
import { startLocalnet } from '../localnet/localnet.js';

/**
 * `npm run localnet`: the embedded chain alone, like `solana-test-validator`, on LOCALNET_PORT
 * (8899, WebSocket 8900) with its state in DATA_DIR/localnet, so other tools can point at it.
 * `-- --plain-validator` hides its `localnet_*` methods: the service then takes it for a validator
 * it does not control (as compose's), which the split-roles topology test needs.
 */
const config = readConfig();
const plainValidator = process.argv.includes('--plain-validator');
const localnet = await startLocalnet({
  dir: path.join(config.dataDir, 'localnet'),
  port: config.LOCALNET_PORT,
  plainValidator,
});
console.log(
  `Ledgerfeed localnet is running\n  JSON-RPC   ${localnet.rpcUrl}\n  WebSocket  ${localnet.wsUrl}\n` +
    `  Ledger     ${path.relative(process.cwd(), path.join(config.dataDir, 'localnet'))}\n` +
    `  Genesis    ${localnet.chain.genesisHash}\n` +
    (plainValidator ? '  Mode       plain validator (localnet_* methods hidden)\n' : '') +
    'Press Ctrl-C to stop.',
);
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  void localnet.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
