import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@solana/web3.js';
import { afterAll, expect, test } from 'vitest';
import { freePort } from '../src/devstack/free-port.js';

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'ledgerfeed-localnet-cli-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

test(
  '`npm run localnet` serves the chain standalone and keeps its ledger in DATA_DIR',
  { timeout: 60_000 },
  async () => {
    const port = await freePort();
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/localnet.ts'], {
      env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir, LOCALNET_PORT: String(port) },
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const deadline = Date.now() + 30_000;
    while (!output.includes('Press Ctrl-C')) {
      if (child.exitCode !== null || Date.now() > deadline)
        throw new Error(`localnet did not start:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(output).toContain(`JSON-RPC   http://127.0.0.1:${port}`);
    expect(output).toContain(`WebSocket  ws://127.0.0.1:${port + 1}`);

    const connection = new Connection(`http://127.0.0.1:${port}`, 'confirmed');
    expect(await connection.getVersion()).toHaveProperty('solana-core');
    const slot = await connection.getSlot();
    await new Promise((resolve) => setTimeout(resolve, 900));
    expect(await connection.getSlot()).toBeGreaterThan(slot);

    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(existsSync(path.join(dataDir, 'localnet', 'chain.json'))).toBe(true);
  },
);
