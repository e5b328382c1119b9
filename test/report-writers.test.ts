import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { reconcileRound } from '../src/app/indexer/reconciler.js';
import { followWallets } from '../src/app/indexer/wallet-follower.js';
import {
  COINTRACKER_HEADER,
  HISTORY_TYPES,
  KOINLY_HEADER,
  REPORT_COLUMNS,
} from '../src/domain/reports/report-kinds.js';
import { parseUnits, type LedgerCurrency } from '../src/domain/reports/report-format.js';
import { LOCALNET_SEED } from '../src/adapters/solana/index.js';
import { depositNative } from './support/deposit.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { paymentsSettled } from './support/settled.js';
import { jsonLines, parseCsv } from './support/report-files.js';
import { until } from './support/until.js';
import {
  currencyOf,
  ledgerBalancesAt,
  onChainAt as chainTokensAt,
  shipAll,
  writeReportToBuffer,
} from './support/report-writing.js';

/**
 * The report writers against the real stores: paid activity through REST, settled by the worker,
 * reconciled by the indexer and shipped to ClickHouse, then each report written into a buffer.
 */
let h: ServiceHarness;
let alice: Member;
let bob: Member;
let carol: Member;
let midAt: Date;
let startedAt: Date;
let endedAt: Date;
let dir: string;

const run = (spec: Parameters<typeof writeReportToBuffer>[2]) =>
  writeReportToBuffer(h, { start: startedAt, end: endedAt }, spec);
const onChainAt = (owner: string, currency: LedgerCurrency) => chainTokensAt(h, owner, currency);

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
  dir = await mkdtemp(join(tmpdir(), 'report-writers-'));
  startedAt = new Date(Date.now() - 1000);
  alice = await h.member('rw_alice', 10_000_000n);
  bob = await h.member('rw_bob', 10_000_000n);
  carol = await h.member('rw_carol', 0n);
  const created = await h.call(alice, 'POST', '/posts', { content: 'a paid post', type: 'post' });
  expect(created.status).toBe(201);
  const postId = ((await created.json()) as { id: string }).id;
  await paymentsSettled(h.env.app.db);
  // Everything before midAt is the opening of the second interval.
  midAt = new Date();
  await new Promise((resolve) => setTimeout(resolve, 20));
  expect(
    (await h.call(bob, 'POST', '/posts', { content: 'reply', type: 'reply', parent_id: postId })).status,
  ).toBe(201);
  expect((await h.call(bob, 'POST', `/posts/${postId}/repost`)).status).toBe(201);
  expect((await h.call(bob, 'POST', `/posts/${postId}/like`)).status).toBe(200);
  const sent = await h.call(alice, 'POST', '/send', {
    to_handle: 'rw_carol',
    amount_usd: 1.25,
    memo: 'lunch, "on me"',
  });
  expect(sent.status).toBe(201);
  await depositNative(h.env.app, h.platform, bob.account, 50_000_000_000n);
  const swapped = await h.call(bob, 'POST', '/swap-to-usdc', { amount_tokens: '20000000000' });
  expect(swapped.status).toBe(201);
  await paymentsSettled(h.env.app.db);
  await reconcileRound(h.env.app, { missingAfterMs: 600_000, limit: 1_000 });
  // The chain's side of what the ledger did not send: the faucet deposits (recorded by the faucet,
  // indexed by the follower) and the bootstrap's seed of the pool's vaults.
  await followWallets(h.env.app);
  await shipAll(h.env.app);
  endedAt = new Date(Date.now() + 1000);
}, 120_000);
afterAll(async () => {
  await h?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('reconciliation.itemized', () => {
  test('csv: a header, then every verdict of the interval (matched too) with USDC amounts to 6 places, CRLF', async () => {
    const { rowCount, bytes, summary } = await run({ type: 'reconciliation.itemized' });
    const text = bytes.toString('utf8');
    expect(bytes[0]).not.toBe(0xef); // no byte-order mark
    const lines = text.split('\r\n');
    expect(lines.at(-1)).toBe('');
    expect(lines[0]).toBe(REPORT_COLUMNS['reconciliation.itemized'].join(','));
    // Two deposits (credited, not outbox payments), a post, a reply, a repost: the three payments.
    expect(rowCount).toBe(lines.length - 2);
    expect(rowCount).toBeGreaterThanOrEqual(3);
    expect(summary).toBeNull();
    for (const line of lines.slice(1, -1)) {
      const cells = line.split(',');
      expect(cells[4]).toBe('USDC');
      expect(cells[5]).toMatch(/^\d+\.\d{6}$/);
      expect(cells[9]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    }
    expect(lines.some((line) => line.includes(',matched,USDC,1.000000,'))).toBe(true);
  });

  test('jsonl: one object per verdict keyed by the chosen columns; an interval before the activity is empty', async () => {
    const { rowCount, bytes } = await run({
      type: 'reconciliation.itemized',
      format: 'jsonl',
      columns: ['swap_tx', 'status', 'ledger_amount'],
      timezone: 'Asia/Kolkata',
    });
    const objects = bytes
      .toString('utf8')
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, string>);
    expect(objects).toHaveLength(rowCount);
    for (const object of objects) expect(Object.keys(object)).toEqual(['swap_tx', 'status', 'ledger_amount']);
    const before = await run({
      type: 'reconciliation.itemized',
      intervalStart: new Date(startedAt.getTime() - 3_600_000),
      intervalEnd: startedAt,
    });
    expect(before.rowCount).toBe(0);
    expect(before.bytes.toString()).toBe(`${REPORT_COLUMNS['reconciliation.itemized'].join(',')}\r\n`);
  });

  test('parquet: ClickHouse writes the file; PAR1 at both ends, its row count as chdb reads it back', async () => {
    const csv = await run({ type: 'reconciliation.itemized' });
    const { rowCount, bytes } = await run({ type: 'reconciliation.itemized', format: 'parquet' });
    expect(rowCount).toBe(csv.rowCount);
    expect(bytes.subarray(0, 4).toString()).toBe('PAR1');
    expect(bytes.subarray(-4).toString()).toBe('PAR1');
    const path = join(dir, 'reconciliation.parquet');
    await writeFile(path, bytes);
    const result = await h.env.app.clickhouse.client.query({
      query: `SELECT count() AS n, countIf(currency = 'USDC') AS usdc FROM file({path:String}, 'Parquet')`,
      query_params: { path },
      format: 'JSONEachRow',
    });
    expect(await result.json()).toEqual([{ n: String(rowCount), usdc: String(rowCount) }]);
  });
});

describe('balance.summary', () => {
  test('opening + every type = closing for every account to the base unit; closing = the Postgres ledger at interval_end', async () => {
    const { rows: handles } = await import('kysely').then(({ sql }) =>
      sql<{ id: string; handle: string }>`SELECT id, handle FROM accounts`.execute(h.env.app.db),
    );
    const handleOf = new Map(handles.map((row) => [row.id, row.handle]));
    const { bytes, rowCount, summary } = await run({
      type: 'balance.summary',
      format: 'jsonl',
      intervalStart: midAt,
    });
    const rows = jsonLines(bytes);
    expect(rows).toHaveLength(rowCount);
    const postgres = new Map<string, bigint>();
    for (const row of await ledgerBalancesAt(h.env.app.db, endedAt)) {
      const account = row.kind === 'user' ? handleOf.get(row.account_id ?? '') : row.kind;
      postgres.set(`${account}/${row.currency}`, row.balance);
    }
    const opening = new Map<string, bigint>();
    for (const row of await ledgerBalancesAt(h.env.app.db, midAt)) {
      const account = row.kind === 'user' ? handleOf.get(row.account_id ?? '') : row.kind;
      opening.set(`${account}/${row.currency}`, row.balance);
    }
    expect(rows.length).toBeGreaterThanOrEqual(postgres.size - 0);
    for (const row of rows) {
      const currency = currencyOf(row.currency);
      const units = (name: string) => parseUnits(row[name] ?? '', currency);
      const moved = HISTORY_TYPES.reduce((sum, type) => sum + units(type), 0n);
      expect(units('opening') + moved).toBe(units('closing'));
      const key = `${row.account}/${currency}`;
      expect(units('closing'), key).toBe(postgres.get(key) ?? 0n);
      expect(units('opening'), key).toBe(opening.get(key) ?? 0n);
    }
    // alice: her post before midAt is in her opening; the reply and repost shares are earnings; the send is a send.
    const aliceUsdc = rows.find((row) => row.account === 'rw_alice' && row.currency === 'USDC')!;
    expect(aliceUsdc).toMatchObject({
      opening: '9.000000',
      post: '0.000000',
      earn: '1.000000',
      send: '-1.250000',
    });
    expect(rows.find((row) => row.account === 'rw_carol')).toMatchObject({
      receive: '1.250000',
      closing: '1.250000',
    });
    const bobNative = rows.find((row) => row.account === 'rw_bob' && row.currency !== 'USDC')!;
    expect(bobNative).toMatchObject({
      deposit: '50.000000000',
      swap: '-20.000000000',
      closing: '30.000000000',
    });
    expect(summary?.map((line) => line.currency).sort()).toEqual(['LFEED', 'USDC']);
    // chain_closing is read from the indexed token_movements; it must be what the chain holds.
    // Users' wallets: the ledger account and the custodial wallet are the same money (the faucet's
    // deposits are indexed by the wallet follower like any other), so difference = 0 in both
    // currencies.
    const rowOf = (account: string, currency: LedgerCurrency) =>
      rows.find((r) => r.account === account && currencyOf(r.currency) === currency);
    const users = [alice, bob, carol].map((who) => [who.account.handle, who.account.walletAddress] as const);
    for (const [handle, wallet] of users) {
      for (const currency of ['usdc', 'native'] as const) {
        const row = rowOf(handle, currency);
        if (currency === 'usdc') expect(row, handle).toBeDefined();
        if (!row) continue;
        const onChain = await onChainAt(wallet, currency);
        expect(parseUnits(row.chain_closing!, currency), `${handle}/${currency}`).toBe(onChain);
        expect(parseUnits(row.closing!, currency), `${handle}/${currency}`).toBe(onChain);
        expect(parseUnits(row.difference!, currency), `${handle}/${currency}`).toBe(0n);
      }
    }
    // Platform wallets: chain_closing is the wallet's tokens on chain too. The treasury's ledger
    // account is its wallet's money (difference 0); the swap pool's vaults hold the bootstrap's seed,
    // which is on chain (indexed) but no ledger movement, so its difference is minus the seed.
    const platformWallets = [
      ['treasury', h.platform.signers.treasury.publicKey.toBase58(), 'usdc', 0n],
      ['swap_pool', h.platform.signers.pool_authority.publicKey.toBase58(), 'usdc', -LOCALNET_SEED.poolUsdc],
      [
        'swap_pool',
        h.platform.signers.pool_authority.publicKey.toBase58(),
        'native',
        -LOCALNET_SEED.poolNative,
      ],
    ] as const;
    for (const [kind, owner, currency, difference] of platformWallets) {
      const row = rowOf(kind, currency);
      expect(row, `${kind}/${currency}`).toBeDefined();
      expect(parseUnits(row!.chain_closing!, currency), `${kind}/${currency}`).toBe(
        await onChainAt(owner, currency),
      );
      expect(parseUnits(row!.difference!, currency), `${kind}/${currency}`).toBe(difference);
      expect(parseUnits(row!.closing!, currency) - parseUnits(row!.chain_closing!, currency)).toBe(
        difference,
      );
    }
    expect(rows.find((r) => r.account === 'fee_pool')?.chain_closing ?? null).toBeNull();
  });

  test('parquet: the rows and summary of the csv; row_count is the rows chdb reads back from the file', async () => {
    const csv = await run({ type: 'balance.summary', intervalStart: midAt });
    const { rowCount, bytes, summary } = await run({
      type: 'balance.summary',
      format: 'parquet',
      intervalStart: midAt,
    });
    expect(rowCount).toBe(csv.rowCount);
    expect(summary).toEqual(csv.summary);
    const path = join(dir, 'balance-summary.parquet');
    await writeFile(path, bytes);
    const result = await h.env.app.clickhouse.client.query({
      query: `SELECT count() AS n FROM file({path:String}, 'Parquet')`,
      query_params: { path },
      format: 'JSONEachRow',
    });
    expect(await result.json()).toEqual([{ n: String(rowCount) }]);
  });
});

describe('ledger.itemized', () => {
  test('sums per account and currency to closing - opening of balance.summary; times in the timezone', async () => {
    const legs = await run({ type: 'ledger.itemized', intervalStart: midAt, timezone: 'Europe/Paris' });
    const records = parseCsv(legs.bytes.toString('utf8'));
    expect(records[0]).toEqual(REPORT_COLUMNS['ledger.itemized']);
    expect(records).toHaveLength(legs.rowCount + 1);
    const col = (name: string) => REPORT_COLUMNS['ledger.itemized'].indexOf(name);
    const sums = new Map<string, bigint>();
    for (const record of records.slice(1)) {
      expect(record[col('created_at')]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+0[12]:00$/);
      const currency = currencyOf(record[col('currency')]);
      const key = `${record[col('account')]}/${currency}`;
      sums.set(key, (sums.get(key) ?? 0n) + parseUnits(record[col('amount')]!, currency));
    }
    const summary = jsonLines(
      (await run({ type: 'balance.summary', format: 'jsonl', intervalStart: midAt })).bytes,
    );
    for (const row of summary) {
      const currency = currencyOf(row.currency);
      const key = `${row.account}/${currency}`;
      expect(sums.get(key) ?? 0n, key).toBe(
        parseUnits(row.closing!, currency) - parseUnits(row.opening!, currency),
      );
    }
    const send = records.find((r) => r[col('type')] === 'send')!;
    expect(send[col('counterparty')]).toBe('rw_carol');
    expect(send[col('account')]).toBe('rw_alice');
    expect(send[col('status')]).toMatch(/^(confirmed|finalized)$/);
    expect(send[col('slot')]).toMatch(/^\d+$/);
    const reply = records.find((r) => r[col('kind')] === 'post' && r[col('account')] === 'rw_bob')!;
    expect(reply[col('related_post_id')]).toMatch(/^[0-9a-f-]{36}$/);
    expect(records.some((r) => r[col('account')] === 'treasury')).toBe(true);
    const parquet = await run({ type: 'ledger.itemized', format: 'parquet', intervalStart: midAt });
    expect(parquet.rowCount).toBe(legs.rowCount);
    expect(parquet.bytes.subarray(0, 4).toString()).toBe('PAR1');
    expect(parquet.bytes.subarray(-4).toString()).toBe('PAR1');
  });

  test.each(['UTC', 'Europe/Paris', 'America/Los_Angeles', 'Asia/Kolkata'])(
    "the CSV (printed by ClickHouse) holds the JSON Lines' values, row by row, in %s",
    async (timezone) => {
      const all = REPORT_COLUMNS['ledger.itemized'];
      const columns = [...all].reverse().filter((c) => c !== 'kind');
      const jsonlRun = () =>
        run({ type: 'ledger.itemized', format: 'jsonl', intervalStart: midAt, timezone });
      // Checks until one of the interval's transactions is found finalized, so finalized_at is
      // printed too; then the CSV between two JSON Lines files that are the same (no verdict of
      // the interval changed while the CSV was read).
      let jsonl = await until(
        'a transaction of the interval checked finalized',
        async () => {
          await reconcileRound(h.env.app, { missingAfterMs: 600_000, finalizedRecheckMs: 0, limit: 1_000 });
          return jsonlRun();
        },
        (file) => jsonLines(file.bytes).some((line) => line.finalized_at !== null),
      );
      let csv = await run({ type: 'ledger.itemized', intervalStart: midAt, timezone, columns });
      for (let again = await jsonlRun(); !again.bytes.equals(jsonl.bytes); again = await jsonlRun()) {
        jsonl = again;
        csv = await run({ type: 'ledger.itemized', intervalStart: midAt, timezone, columns });
      }
      const text = csv.bytes.toString('utf8');
      expect(text.endsWith('\r\n')).toBe(true);
      expect(text.split('\r\n')).toHaveLength(csv.rowCount + 2);
      const records = parseCsv(text);
      expect(records[0]).toEqual(columns);
      const lines = jsonLines(jsonl.bytes);
      expect(csv.rowCount).toBe(jsonl.rowCount);
      expect(lines.length).toBeGreaterThan(5);
      expect(records.slice(1)).toEqual(lines.map((line) => columns.map((c) => line[c] ?? '')));
    },
    90_000,
  );
});

describe('account.statement', () => {
  test('csv, koinly and cointracker have their exact headers; balance_after runs from the opening; every swap_tx resolves', async () => {
    const csv = await run({ type: 'account.statement', accountId: bob.account.id });
    const records = parseCsv(csv.bytes.toString('utf8'));
    expect(records[0]).toEqual(REPORT_COLUMNS['account.statement']);
    const col = (name: string) => REPORT_COLUMNS['account.statement'].indexOf(name);
    const running = new Map<string, bigint>();
    for (const record of records.slice(1)) {
      const currency = currencyOf(record[col('currency')]);
      const after = (running.get(currency) ?? 0n) + parseUnits(record[col('amount')]!, currency);
      running.set(currency, after);
      expect(parseUnits(record[col('balance_after')]!, currency)).toBe(after);
    }
    expect(csv.summary).toEqual(
      expect.arrayContaining([{ currency: 'USDC', opening: '0.000000', closing: expect.any(String) }]),
    );
    expect(records.map((r) => r[col('type')])).toEqual(
      expect.arrayContaining(['deposit', 'post', 'repost', 'swap']),
    );
    // The history (and so GET /payments) is in dollars: a native-only movement (the native deposit) is
    // listed with its signature but is no payment of the history.
    const usdcRows = records.slice(1).filter((r) => r[col('currency')] === 'USDC');
    const swapTxs = new Set(usdcRows.map((r) => r[col('swap_tx')]).filter((tx): tx is string => !!tx));
    expect(swapTxs.size).toBeGreaterThan(2);
    for (const tx of swapTxs) {
      const found = await h.call(bob, 'GET', `/payments/${tx}`);
      expect(found.status, tx).toBe(200);
    }

    const parquet = await run({ type: 'account.statement', accountId: bob.account.id, format: 'parquet' });
    expect(parquet.rowCount).toBe(csv.rowCount);
    expect(parquet.bytes.subarray(0, 4).toString()).toBe('PAR1');
    expect(parquet.bytes.subarray(-4).toString()).toBe('PAR1');
    expect(parquet.summary).toEqual(csv.summary);

    const koinly = await run({ type: 'account.statement', accountId: bob.account.id, format: 'koinly' });
    const koinlyRecords = parseCsv(koinly.bytes.toString('utf8'));
    expect(koinly.bytes.toString('utf8').split('\r\n')[0]).toBe(KOINLY_HEADER.join(','));
    const swap = koinlyRecords.slice(1).find((r) => r[1] !== '' && r[3] !== '')!;
    expect(swap).toEqual([
      expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
      '20.000000000',
      'LFEED',
      expect.stringMatching(/^\d+\.\d{6}$/),
      'USDC',
      '',
      '',
      '',
      '',
      '',
      'Swap of native tokens to USDC',
      expect.any(String),
    ]);
    expect(koinlyRecords.slice(1).filter((r) => r[9] === 'cost')).toHaveLength(2);
    const cointracker = await run({
      type: 'account.statement',
      accountId: alice.account.id,
      format: 'cointracker',
    });
    const ctRecords = parseCsv(cointracker.bytes.toString('utf8'));
    expect(ctRecords[0]).toEqual([...COINTRACKER_HEADER]);
    expect(cointracker.bytes.toString('utf8').split('\r\n')[0]).toBe(COINTRACKER_HEADER.join(','));
    expect(ctRecords.filter((r) => r[7] === 'payment').map((r) => r[1])).toEqual(['0.500000', '0.500000']);
    for (const r of ctRecords.slice(1)) expect(r[0]).toMatch(/^\d{2}\/\d{2}\/\d{4} \d{2}:\d{2}:\d{2}$/);

    const aliceCsv = parseCsv(
      (await run({ type: 'account.statement', accountId: alice.account.id })).bytes.toString('utf8'),
    );
    expect(aliceCsv.find((r) => r[col('type')] === 'send')).toEqual(
      expect.arrayContaining(['Sent to @rw_carol: lunch, "on me"', 'rw_carol']),
    );
  });
});
