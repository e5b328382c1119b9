import type { QueueProcessor } from './worker.role.js';

/** Every queue the worker role serves. Empty until the write-path issue adds payments. */
export const processors: readonly QueueProcessor[] = [];
