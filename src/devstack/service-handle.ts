/** A backing service the devstack resolved: either one the user pointed at, or one it started. */
export interface ServiceHandle {
  /** Connection URL the application uses (never tells it whether the server is embedded). */
  readonly url: string;
  /** How the service was found, for the start-up summary and /healthz. */
  readonly source: ServiceSource;
  /** Stops what this process started; a no-op for external or borrowed services. */
  stop(): Promise<void>;
  /**
   * For a process about to exit without stopping (a stop past its deadline, a second Ctrl-C):
   * tells a server this process started to shut down on its own, and returns at once. Absent
   * when there is nothing to tell (not ours, or it lives in this process).
   */
  abandon?(): void;
}

export type ServiceSource =
  | 'external' // URL given in the environment
  | 'embedded' // started by this process
  | 'shared' // started by another Ledgerfeed process with the same DATA_DIR (stack.json)
  | 'local'; // a server already answering on its standard local port

export const noStop = async (): Promise<void> => {};
