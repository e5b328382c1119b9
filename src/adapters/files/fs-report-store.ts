import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { link, mkdir, open, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { checkReportFileKey, hashStream, HashingCounter, type ReportFileStore } from './report-file.js';

/**
 * Report files in a folder (`DATA_DIR/reports` by default). A file is written to `.partial/` under
 * a name of its own, fsynced, then hard-linked to its key: link(2) fails when the key exists, so
 * the first attempt to finish wins and a key is never rewritten; the folder is fsynced so the new
 * name survives a power cut. A partial file of an attempt that died stays in `.partial/` (at most
 * one per attempt; nothing links to it).
 *
 * It has the shape of src/app/reports/report-store.ts's ReportStore (adapters do not import app/:
 * the wiring passes it as one).
 */
export function createFsReportStore(folder: string): ReportFileStore {
  const partialDir = path.join(folder, '.partial');
  const fileOf = (key: string) => {
    checkReportFileKey(key);
    return path.join(folder, key);
  };

  async function fsyncDir(dir: string): Promise<void> {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  return {
    async write<T>(key: string, produce: (sink: Writable) => Promise<T>) {
      const final = fileOf(key);
      await mkdir(partialDir, { recursive: true });
      const partial = path.join(partialDir, `${key}.${randomUUID()}`);
      const counter = new HashingCounter();
      // flush: fsync before the stream reports `finish`, so the link below names durable bytes.
      const file = createWriteStream(partial, { flush: true });
      const written = pipeline(counter, file);
      let result: T;
      try {
        result = await produce(counter);
        counter.end();
        await written;
      } catch (error) {
        counter.destroy();
        await written.catch(() => {});
        await unlink(partial).catch(() => {});
        throw error;
      }
      try {
        await link(partial, final);
      } catch (error) {
        await unlink(partial).catch(() => {});
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        // An earlier attempt of the same run finished the file: it stays, as it is.
        return { result, ...(await hashStream(createReadStream(final))) };
      }
      await unlink(partial);
      await fsyncDir(folder);
      return { result, bytes: counter.bytes, sha256: counter.hash.digest('hex') };
    },

    async open(key) {
      const file = fileOf(key);
      const info = await stat(file).catch(() => undefined);
      if (!info?.isFile()) return undefined;
      return { stream: createReadStream(file), bytes: info.size };
    },
  };
}
