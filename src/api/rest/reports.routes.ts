import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../../app/api-deps.js';
import { checkFileLink, issueFileLink } from '../../app/reports/report-file-links.js';
import {
  getRun,
  listRuns,
  openRunFile,
  openSucceededRunFile,
  REPORT_PAGE_MAX,
  requestRun,
} from '../../app/reports/report-runs.js';
import { REPORT_FILE_LINK_SECONDS } from '../../domain/reports/report-file-link.js';
import {
  REPORT_FORMATS,
  REPORT_MAX_INTERVAL_DAYS,
  REPORT_STATUSES,
  REPORT_TYPES,
} from '../../domain/reports/report-kinds.js';
import { reportFileUrl, type ReportRun } from '../../domain/reports/report-run.js';
import { spend } from '../rate-limit-spend.js';
import { authErrors, errorBody, idempotencyKeyHeaders } from './schemas.js';
import { typedRoutes } from './typed-routes.js';

const time = { type: 'string', format: 'date-time' } as const;
const nullableTime = { type: ['string', 'null'], format: 'date-time' } as const;

/**
 * The body is checked by the service (parseReportRequest), which names the field it refuses: the
 * schema documents it and only asks for an object, so every refusal reads the same on REST and
 * GraphQL.
 */
const requestBody = {
  type: 'object',
  properties: {
    type: { type: 'string', enum: [...REPORT_TYPES] },
    interval_start: {
      type: 'string',
      description:
        'Inclusive. An ISO 8601 instant with Z or an offset, or a local YYYY-MM-DD[THH:mm[:ss]] read in timezone',
    },
    interval_end: {
      type: 'string',
      description: `Exclusive; after interval_start, at most ${REPORT_MAX_INTERVAL_DAYS} days after it, not later than now. Same forms as interval_start`,
    },
    timezone: { type: 'string', description: 'An IANA time zone name; default UTC' },
    columns: {
      type: 'array',
      items: { type: 'string' },
      description:
        "A non-empty subset of the type's columns, in the order the file carries them; default all",
    },
    format: {
      type: 'string',
      enum: [...REPORT_FORMATS],
      description: 'Default csv; koinly and cointracker for account.statement only',
    },
    account: {
      type: 'string',
      description:
        "account.statement only: the account's handle (default the caller's own; another account's needs the finance role)",
    },
  },
  examples: [
    {
      type: 'account.statement',
      interval_start: '2026-10-01',
      interval_end: '2026-11-01',
      timezone: 'Europe/Paris',
    },
  ],
} as const;

const acceptedRun = {
  type: 'object',
  required: ['id', 'type', 'status', 'interval_start', 'interval_end', 'timezone', 'format', 'created_at'],
  properties: {
    id: { type: 'string', description: 'UUID' },
    type: { type: 'string', enum: [...REPORT_TYPES] },
    status: { type: 'string', enum: [...REPORT_STATUSES] },
    interval_start: time,
    interval_end: time,
    timezone: { type: 'string' },
    format: { type: 'string', enum: [...REPORT_FORMATS] },
    created_at: time,
  },
} as const;

const summaryLine = {
  type: 'object',
  required: ['currency', 'opening', 'closing'],
  properties: {
    currency: { type: 'string', description: 'USDC or the native token’s symbol' },
    opening: { type: 'string', description: 'Decimal string in the currency’s units' },
    closing: { type: 'string', description: 'Decimal string in the currency’s units' },
  },
} as const;

const run = {
  type: 'object',
  required: [
    ...acceptedRun.required,
    'columns',
    'account',
    'started_at',
    'finished_at',
    'row_count',
    'bytes',
    'sha256',
    'file_url',
    'summary',
    'error',
  ],
  properties: {
    ...acceptedRun.properties,
    columns: { type: 'array', items: { type: 'string' } },
    account: { type: ['string', 'null'], description: 'The handle an account.statement is about' },
    started_at: nullableTime,
    finished_at: nullableTime,
    row_count: { type: ['integer', 'null'], description: 'Data rows (no header); once succeeded' },
    bytes: { type: ['integer', 'null'], description: 'The file’s size; once succeeded' },
    sha256: { type: ['string', 'null'], description: 'Hex sha256 of the file; once succeeded' },
    file_url: { type: ['string', 'null'], description: '/api/v1/reports/{id}/file; once succeeded' },
    summary: {
      type: ['array', 'null'],
      items: summaryLine,
      description: 'account.statement and balance.summary: opening and closing per currency',
    },
    error: { type: ['string', 'null'], description: 'Why it failed; null unless failed' },
  },
} as const;

const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', description: 'The run (a UUID; anything else is 404)' } },
} as const;

function acceptedView(r: ReportRun) {
  return {
    id: r.id,
    type: r.type,
    status: r.status,
    interval_start: r.intervalStart.toISOString(),
    interval_end: r.intervalEnd.toISOString(),
    timezone: r.timezone,
    format: r.format,
    created_at: r.createdAt.toISOString(),
  };
}

function runView(r: ReportRun) {
  const succeeded = r.status === 'succeeded';
  return {
    ...acceptedView(r),
    columns: r.columns,
    account: r.subjectHandle,
    started_at: r.startedAt?.toISOString() ?? null,
    finished_at: r.finishedAt?.toISOString() ?? null,
    row_count: succeeded ? r.rowCount : null,
    bytes: succeeded ? r.bytes : null,
    sha256: succeeded ? r.sha256 : null,
    file_url: succeeded ? reportFileUrl(r.id) : null,
    summary: succeeded ? r.summary : null,
    error: r.error,
  };
}

/**
 * The file's 200, for the document: the route sends the stored file as it is (a stream), so no
 * serializer ever sees it.
 */
const reportFile = {
  description:
    'The file as it was made: its bytes hash to the run’s `sha256` (also in the `x-content-sha256` header)',
  content: {
    'text/csv; charset=utf-8': { schema: { type: 'string' } },
    'application/x-ndjson': { schema: { type: 'string' } },
    'application/vnd.apache.parquet': { schema: { type: 'string', format: 'binary' } },
  },
} as const;

/** The query of a download link (POST /reports/{id}/file-link); the keyed download sends none. */
const fileLinkQuerystring = {
  type: 'object',
  properties: {
    expires: {
      type: 'string',
      description:
        'A download link’s expiry (Unix seconds). With `signature`, the file opens without an API key until then',
    },
    signature: {
      type: 'string',
      description:
        'A download link’s signature (hex HMAC-SHA256 of the run, expiry and account it was issued to). Ignored when an Authorization header is sent',
    },
    account: {
      type: 'string',
      description:
        'Only in a link issued to an account other than the run’s asker (a closed period’s report downloaded by another finance account): that account’s id, covered by the signature',
    },
  },
} as const;

const fileLink = {
  type: 'object',
  required: ['url', 'expires_at'],
  properties: {
    url: {
      type: 'string',
      description:
        '/api/v1/reports/{id}/file?expires=<unix s>&signature=<hex>: the file, without an API key, until expires_at',
    },
    expires_at: time,
  },
} as const;

/**
 * /reports: report runs (docs/reports.md). Asking spends the `reports` bucket and takes an
 * Idempotency-Key as paid writes do; reads and downloads spend `read`. Access beyond `read` (the
 * finance role for anything but one's own statement) is the service's, after the input is checked.
 */
export function registerReportRoutes(api: FastifyInstance, deps: ApiDeps): void {
  const tags = ['reports'];

  typedRoutes(api).post(
    '/reports',
    {
      config: { scope: 'read', bucket: 'reports', idempotent: true },
      schema: {
        operationId: 'createReportRun',
        summary:
          'Ask for a report run (202); the same parameters while a run of yours is pending or running answer that run (200)',
        tags,
        headers: idempotencyKeyHeaders,
        body: requestBody,
        response: {
          200: acceptedRun,
          202: acceptedRun,
          400: errorBody,
          409: errorBody,
          422: errorBody,
          ...authErrors,
        },
      },
    },
    async (request, reply) => {
      const { run: created, created: isNew } = await requestRun(deps, request.viewer!, request.body);
      return reply.status(isNew ? 202 : 200).send(acceptedView(created));
    },
  );

  typedRoutes(api).get(
    '/reports',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'listReportRuns',
        summary: 'Your report runs, newest first',
        tags,
        querystring: {
          type: 'object',
          properties: {
            limit: { type: 'string', description: `Integer from 1 to ${REPORT_PAGE_MAX}; default 20` },
            cursor: { type: 'string', description: 'next_cursor of the previous page; omit for the newest' },
          },
        },
        response: {
          200: {
            type: 'object',
            required: ['reports', 'has_more', 'next_cursor'],
            properties: {
              reports: { type: 'array', items: run },
              has_more: { type: 'boolean' },
              next_cursor: {
                type: ['string', 'null'],
                description: 'The next (older) page’s cursor; null at the end',
              },
            },
          },
          400: errorBody,
          ...authErrors,
        },
      },
    },
    async (request) => {
      const page = await listRuns(deps, request.viewer!, request.query);
      return { reports: page.reports.map(runView), has_more: page.hasMore, next_cursor: page.nextCursor };
    },
  );

  typedRoutes(api).get(
    '/reports/:id',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'getReportRun',
        summary: 'A report run: its status and, once succeeded, its file’s row count, size, sha256 and URL',
        tags,
        params: idParams,
        response: { 200: run, 404: errorBody, ...authErrors },
      },
    },
    async (request) => runView(await getRun(deps, request.viewer!, request.params.id)),
  );

  typedRoutes(api).post(
    '/reports/:id/file-link',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'createReportRunFileLink',
        summary: `A download link to a succeeded run’s file: GET without an API key for ${REPORT_FILE_LINK_SECONDS / 60} minutes, for this run only, with your access; 409 before it succeeded`,
        description:
          'For browsers: a page cannot put an API key on a navigation, so it asks for a link and lets the browser’s download manager stream the file to disk. The link opens only this run’s file, until `expires_at`, with the access of the account that asked for it, and spends that account’s `read` bucket. Anyone holding it can download the file until then: treat it as the file.',
        tags,
        params: idParams,
        response: { 201: fileLink, 404: errorBody, 409: errorBody, ...authErrors },
      },
    },
    async (request, reply) => {
      const link = await issueFileLink(deps, request.viewer!, request.params.id);
      return reply
        .status(201)
        .header('cache-control', 'no-store')
        .send({ url: link.url, expires_at: link.expiresAt.toISOString() });
    },
  );

  typedRoutes(api).get(
    '/reports/:id/file',
    {
      // signedLink: a download link (`?expires&signature`, no Authorization header) opens it too.
      config: { scope: 'read', bucket: 'read', signedLink: true },
      schema: {
        operationId: 'getReportRunFile',
        summary:
          'A succeeded run’s file, streamed: text/csv; charset=utf-8 (csv, koinly, cointracker), application/x-ndjson or application/vnd.apache.parquet; 409 before it succeeded. With an API key, or with a download link’s `expires` and `signature` (POST /reports/{id}/file-link) and no key',
        description:
          'A download link that is not ours for this run (tampered, another run’s, made up) or has expired is 403 `forbidden`; a request with neither a key nor a signature is 401. A request with an Authorization header is judged by its key alone.',
        tags,
        // The API key, or none with a download link's query.
        security: [{ apiKey: [] }, {}],
        params: idParams,
        querystring: fileLinkQuerystring,
        response: { 200: reportFile, 404: errorBody, 409: errorBody, ...authErrors },
      },
    },
    async (request, reply) => {
      let file;
      if (request.viewer) {
        file = await openRunFile(deps, request.viewer, request.params.id);
      } else {
        // No key: the auth hook let a signed link through (presentsSignedLink). The link is checked
        // first (403), then the bucket of the account it was issued to is spent (429), as admit()
        // does for a key.
        const link = await checkFileLink(deps, request.params.id, request.query);
        await spend(deps, reply, 'read', link.accountId);
        file = await openSucceededRunFile(deps, link.run);
        // The URL is the credential: no cache along the way may keep the answer.
        reply.header('cache-control', 'private, no-store');
      }
      return reply
        .type(file.contentType)
        .header('content-length', String(file.bytes))
        .header('content-disposition', `attachment; filename="${file.fileName}"`)
        .header('x-content-sha256', file.run.sha256 ?? '')
        .send(file.stream);
    },
  );
}
