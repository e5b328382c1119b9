/** A role is a long-running part of the service that can run alone or beside the others. */
export type RoleName = 'api' | 'worker' | 'indexer';

export const ROLE_NAMES: readonly RoleName[] = ['api', 'worker', 'indexer'];

export interface RunningRole {
  name: RoleName;
  /** What a person should know about it at start-up (URLs, queues). */
  summary: string[];
  /** Finishes in-flight work and releases connections. */
  stop(): Promise<void>;
}
