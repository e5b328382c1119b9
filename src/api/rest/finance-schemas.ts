import { RECONCILIATION_STATUSES } from '../../domain/reconciliation/reconciliation.js';

/** An exception's fields, in the order the report writes them (the CSV's columns after its day). */
export const EXCEPTION_FIELDS = [
  'movement_id',
  'signature',
  'status',
  'ledger_amount_usd',
  'chain_amount_usd',
  'commitment',
  'detail',
  'checked_at',
] as const;

const exceptionStatuses = RECONCILIATION_STATUSES.filter((status) => status !== 'matched');

/**
 * The JSON report of GET /finance/reconciliation. It also serialises that answer (fast-json-stringify
 * writes the properties in this order), so the order and types here are the handler's, field for
 * field: a field missing here would never leave the server.
 */
const reconciliationReport = {
  type: 'object',
  required: [
    'date',
    'ledger_total_usd',
    'chain_total_usd',
    'matched',
    'exception_counts',
    'payment_counts',
    'exceptions',
    'has_more',
  ],
  properties: {
    date: { type: 'string', description: 'The ledger day, YYYY-MM-DD (UTC)' },
    ledger_total_usd: { type: 'number', description: 'What the ledger moved that day, in dollars' },
    chain_total_usd: { type: 'number', description: 'What the chain shows for those movements, in dollars' },
    matched: { type: 'integer', description: 'Movements whose verdict is matched' },
    exception_counts: {
      type: 'object',
      required: exceptionStatuses,
      properties: Object.fromEntries(exceptionStatuses.map((status) => [status, { type: 'integer' }])),
      description: 'Movements per exception verdict',
    },
    payment_counts: {
      type: 'object',
      required: ['pending', 'confirmed', 'finalized', 'failed'],
      description: 'The day’s payments by outbox state now; pending is signed or sent',
      properties: {
        pending: { type: 'integer' },
        confirmed: { type: 'integer' },
        finalized: { type: 'integer' },
        failed: { type: 'integer' },
      },
    },
    exceptions: {
      type: 'array',
      description:
        'The exceptions of the day, not_finalized included: every one, or the first 100,000 when has_more is true',
      items: {
        type: 'object',
        required: [...EXCEPTION_FIELDS],
        properties: {
          movement_id: { type: 'string' },
          signature: { type: 'string' },
          status: { type: 'string', enum: exceptionStatuses },
          ledger_amount_usd: { type: 'number' },
          chain_amount_usd: { type: 'number' },
          commitment: { type: 'string' },
          detail: { type: 'string' },
          checked_at: {
            type: 'string',
            description: 'When the reconciler recorded the verdict (UTC, YYYY-MM-DD hh:mm:ss[.fff])',
          },
        },
      },
    },
    has_more: {
      type: 'boolean',
      description:
        'True when the day has more exceptions than `exceptions` lists (100,000): the CSV holds every verdict, GraphQL reconciliationExceptions(day:) pages through every exception',
    },
    message: {
      type: 'string',
      description: 'Present only when has_more: says that the list is cut and where the whole is',
    },
  },
};

/** 200 of GET /finance/reconciliation: the JSON report, or with `Accept: text/csv` every verdict as CSV. */
export const reconciliationAnswer = {
  description: 'The day’s report (JSON), or with Accept: text/csv every verdict of the day as CSV',
  content: {
    'application/json': { schema: reconciliationReport },
    'text/csv': {
      schema: {
        type: 'string',
        description:
          'A header line (ledger_day,movement_id,signature,status,ledger_amount_usd,chain_amount_usd,commitment,detail,checked_at), then one line per ledger movement, every verdict of the day however many (streamed, in movement id order); CRLF line ends. Sent as an attachment (reconciliation-YYYY-MM-DD.csv). A body that fails midway is cut (the connection is reset, the chunked encoding never ends): a complete download ends cleanly',
      },
    },
  },
};
