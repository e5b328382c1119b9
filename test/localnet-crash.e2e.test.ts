import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Keypair } from '@solana/web3.js';
import { afterAll, expect, test } from 'vitest';
import { freePort } from '../src/devstack/free-port.js';

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'ledgerfeed-localnet-crash-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

/** `npm run localnet` in a child process, as test/localnet-cli.e2e.test.ts starts it. */
async function startLocalnetProcess(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/localnet.ts'], {
    env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir, LOCALNET_PORT: String(port) },
  });
  children.push(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 30_000;
  while (!output.includes('Press Ctrl-C')) {
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`localnet did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return child;
}

async function batch<T>(url: string, calls: Array<[string, unknown[]]>): Promise<T[]> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(calls.map(([method, params], id) => ({ jsonrpc: '2.0', id, method, params }))),
  });
  const answers = (await response.json()) as Array<{ id: number; result?: T; error?: unknown }>;
  return answers
    .sort((a, b) => a.id - b.id)
    .map((answer) => {
      if (answer.error) throw new Error(JSON.stringify(answer.error));
      return answer.result as T;
    });
}

type Status = { confirmationStatus: string } | null;

async function statuses(url: string, signatures: string[]): Promise<Status[]> {
  const out: Status[] = [];
  for (let from = 0; from < signatures.length; from += 256) {
    const [answer] = await batch<{ value: Status[] }>(url, [
      ['getSignatureStatuses', [signatures.slice(from, from + 256)]],
    ]);
    out.push(...answer!.value);
  }
  return out;
}

test(
  'SIGKILL of the localnet loses no transaction it had reported confirmed, and what survives is consistent',
  { timeout: 120_000 },
  async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    let child = await startLocalnetProcess(port);

    // Airdrops (real System transfers from the faucet) to fresh addresses, ten per request, while
    // the statuses of those not yet confirmed are polled; the kill comes right after a poll that
    // saw new ones confirmed: the newest confirmations are the ones a late write would lose.
    const sent: Array<{ signature: string; owner: string; lamports: number }> = [];
    const confirmed = new Set<string>();
    const started = Date.now();
    for (;;) {
      const owners = Array.from({ length: 10 }, (_, i) => ({
        owner: Keypair.generate().publicKey.toBase58(),
        lamports: 1_000_000 + sent.length + i,
      }));
      const signatures = await batch<string>(
        url,
        owners.map(({ owner, lamports }) => ['requestAirdrop', [owner, lamports]]),
      );
      signatures.forEach((signature, i) => sent.push({ signature, ...owners[i]! }));
      const waiting = sent.filter((entry) => !confirmed.has(entry.signature));
      const seen = await statuses(
        url,
        waiting.map((entry) => entry.signature),
      );
      let fresh = 0;
      seen.forEach((status, i) => {
        if (status && status.confirmationStatus !== 'processed') {
          confirmed.add(waiting[i]!.signature);
          fresh += 1;
        }
      });
      if (fresh > 0 && confirmed.size >= 200 && Date.now() - started > 2_000) break;
      if (Date.now() - started > 60_000) throw new Error(`only ${confirmed.size} confirmed in 60 s`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const exited = new Promise((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');

    child = await startLocalnetProcess(port);
    const after = await statuses(
      url,
      sent.map((entry) => entry.signature),
    );
    const lost = sent.filter((entry, i) => confirmed.has(entry.signature) && after[i] === null);
    expect(lost.map((entry) => entry.signature)).toEqual([]);
    // State and history agree: an airdrop that survived paid its address, one that did not, did not.
    const balances = await batch<{ value: number }>(
      url,
      sent.map((entry) => ['getBalance', [entry.owner]]),
    );
    sent.forEach((entry, i) =>
      expect(balances[i]!.value, entry.signature).toBe(after[i] === null ? 0 : entry.lamports),
    );
    console.log(
      `localnet crash: ${sent.length} airdrops sent, ${confirmed.size} seen confirmed, ` +
        `${after.filter(Boolean).length} there after the restart`,
    );

    // The chain goes on from there.
    const [next] = await batch<string>(url, [
      ['requestAirdrop', [Keypair.generate().publicKey.toBase58(), 1_000_000]],
    ]);
    await expect
      .poll(async () => (await statuses(url, [next!]))[0]?.confirmationStatus, { timeout: 10_000 })
      .toBe('confirmed');
    const exitedCleanly = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGINT');
    expect(await exitedCleanly).toBe(0);
  },
);
