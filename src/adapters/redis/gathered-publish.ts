import type { Redis } from 'ioredis';

/**
 * How long publishes gather before they go to Redis together. Under 100 paid posts and 300 likes a
 * second, each write's PUBLISH was a socket write and a read of its own on the API's event loop,
 * which the feed reads share (a write syscall on loopback costs tens of microseconds here). A few
 * milliseconds gather several into one pipeline: one write, one read.
 */
export const PUBLISH_GATHER_MS = 3;

export interface GatheredPublisher {
  /** Resolves once Redis took the message (with the others of its gathering), rejects if it did not. */
  publish(channel: string, message: string): Promise<void>;
  /** Sends what is gathered now and resolves when Redis took it. */
  flush(): Promise<void>;
}

interface Pending {
  channel: string;
  message: string;
  resolve(): void;
  reject(error: Error): void;
}

/**
 * PUBLISH through `redis`, gathered for `gatherMs` (the first publish of a gathering starts the
 * clock) and sent as one pipeline. Order is kept: one connection runs its commands in the order
 * they were written, a pipeline's included.
 */
export function gatheredPublisher(redis: Redis, gatherMs = PUBLISH_GATHER_MS): GatheredPublisher {
  let pending: Pending[] = [];
  let timer: NodeJS.Timeout | undefined;

  const send = async (batch: Pending[]): Promise<void> => {
    try {
      if (batch.length === 1) {
        await redis.publish(batch[0]!.channel, batch[0]!.message);
        batch[0]!.resolve();
        return;
      }
      const pipeline = redis.pipeline();
      for (const item of batch) pipeline.publish(item.channel, item.message);
      const results = (await pipeline.exec()) ?? [];
      batch.forEach((item, i) => {
        const error = results[i]?.[0];
        if (error) item.reject(error);
        else item.resolve();
      });
    } catch (error) {
      const failure = error instanceof Error ? error : new Error(String(error));
      for (const item of batch) item.reject(failure);
    }
  };

  const flush = (): Promise<void> => {
    clearTimeout(timer);
    timer = undefined;
    const batch = pending;
    pending = [];
    return batch.length > 0 ? send(batch) : Promise.resolve();
  };

  return {
    publish: (channel, message) =>
      new Promise<void>((resolve, reject) => {
        pending.push({ channel, message, resolve, reject });
        timer ??= setTimeout(() => void flush(), gatherMs);
      }),
    flush,
  };
}
