import type { RunStep } from '../src/shutdown/shutdown-steps.js';

/** A role is a long-running part of the service that can run alone or beside the others. */
export type RoleName = 'api' | 'worker' | 'indexer';

export const ROLE_NAMES: readonly RoleName[] = ['api', 'worker', 'indexer'];

export interface RunningRole {
  name: RoleName;
  /** What a person should know about it at start-up (URLs, queues). */
  summary: string[];
  /**
   * Finishes in-flight work and releases connections. Each part it waits for runs through `run`
   * under a name ("worker: payments jobs in hand"), so a stop past its deadline can say what was
   * still running.
   */
  stop(run?: RunStep): Promise<void>;
}
