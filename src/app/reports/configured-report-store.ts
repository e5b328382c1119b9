import path from 'node:path';
import { createFsReportStore } from '../../adapters/files/fs-report-store.js';
import type { Config } from '../../config/index.js';
import type { ReportStore } from './report-store.js';

/**
 * The report store a process is configured with: a folder under DATA_DIR, or an S3-compatible
 * bucket when REPORT_S3_BUCKET is set. The S3 adapter (and the AWS SDK under it) is imported on
 * the bucket's first use, not at start: loading the SDK added ~90 ms to every process's start,
 * most of which never write or read a report.
 */
export function configuredReportStore(config: Config): { store: ReportStore; close(): Promise<void> } {
  const bucket = config.REPORT_S3_BUCKET;
  if (!bucket) {
    return { store: createFsReportStore(path.join(config.dataDir, 'reports')), close: async () => {} };
  }
  let opened: Promise<{ store: ReportStore; destroy(): void }> | undefined;
  const open = () =>
    (opened ??= import('../../adapters/files/s3-report-store.js').then((s3) => {
      const client = s3.createS3Client({
        region: config.REPORT_S3_REGION,
        endpoint: config.REPORT_S3_ENDPOINT,
        credentials:
          config.REPORT_S3_ACCESS_KEY_ID && config.REPORT_S3_SECRET_ACCESS_KEY
            ? {
                accessKeyId: config.REPORT_S3_ACCESS_KEY_ID,
                secretAccessKey: config.REPORT_S3_SECRET_ACCESS_KEY,
              }
            : undefined,
      });
      const store = s3.createS3ReportStore({ client, bucket, prefix: config.REPORT_S3_PREFIX });
      return { store, destroy: () => client.destroy() };
    }));
  return {
    store: {
      write: async (key, produce) => (await open()).store.write(key, produce),
      open: async (key) => (await open()).store.open(key),
    },
    close: async () => {
      if (opened) (await opened.catch(() => undefined))?.destroy();
    },
  };
}
