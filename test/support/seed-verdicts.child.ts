import { createClickHouse, migrateClickHouse } from '../../src/adapters/clickhouse/index.js';

/**
 * Seeds `rows` matched reconciliation verdicts (one movement each, 1 USDC) spread over `days` UTC
 * days from `firstDay` into the embedded ClickHouse (chdb) folder `path`, database `database`.
 * Run as its own process (`node --import tsx test/support/seed-verdicts.child.ts <path> <database>
 * <rows> <firstDay> <days>`): chdb binds one folder per process, and this is the folder of a
 * worker child the test starts once this process has exited.
 */
const [path, database, rows, firstDay, days] = process.argv.slice(2);
if (!path || !database || !rows || !firstDay || !days)
  throw new Error('usage: <path> <database> <rows> <firstDay> <days>');
const ch = createClickHouse({ kind: 'chdb', path }, database);
await migrateClickHouse(ch);
await ch.client.command({
  query: `INSERT INTO ${ch.table('reconciliation')}
            (movement_id, signature, ledger_day, status, ledger_amount, chain_amount, commitment, detail, checked_at)
          SELECT toUUID(concat('00000000-0000-4000-8000-', leftPad(lower(hex(number)), 12, '0'))),
                 concat('seeded-signature-', toString(number)),
                 toDate({firstDay:String}) + toUInt32(number % {days:UInt32}),
                 'matched', 1000000, 1000000, 'finalized', '', now64(3)
            FROM numbers({rows:UInt64})`,
  query_params: { firstDay, days: Number(days), rows: Number(rows) },
});
const counted = await ch.client.query({
  query: `SELECT count() AS n FROM ${ch.table('reconciliation')}`,
  format: 'JSONEachRow',
});
process.stdout.write(`${JSON.stringify(await counted.json())}\n`);
await ch.close();
