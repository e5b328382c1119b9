import { expect, test } from 'vitest';
import { AppError } from '../../domain/errors.js';
import { isRetryableReportError } from './run-report.js';

/** An error as the AWS SDK throws it: the HTTP status in `$metadata`. */
const s3Error = (name: string, httpStatusCode: number) =>
  Object.assign(new Error(name), { name, $metadata: { httpStatusCode } });

test('a store that could not be reached, or a bucket answering 5xx/429, is tried again; a refusal is not', () => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8123'), { code: 'ECONNREFUSED' });
  expect(isRetryableReportError(refused)).toBe(true);
  expect(isRetryableReportError(new Error('wrapped', { cause: refused }))).toBe(true);
  expect(isRetryableReportError(new AppError('unavailable', 'down'))).toBe(true);
  expect(isRetryableReportError(s3Error('SlowDown', 503))).toBe(true);
  expect(isRetryableReportError(s3Error('InternalError', 500))).toBe(true);
  expect(isRetryableReportError(s3Error('TooManyRequests', 429))).toBe(true);
  expect(isRetryableReportError(s3Error('AccessDenied', 403))).toBe(false);
  expect(isRetryableReportError(s3Error('NoSuchBucket', 404))).toBe(false);
  expect(isRetryableReportError(new AppError('invalid_request', 'bad column'))).toBe(false);
});
