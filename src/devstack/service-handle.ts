/** A backing service the devstack resolved: either one the user pointed at, or one it started. */
export interface ServiceHandle {
  /** Connection URL the application uses (never tells it whether the server is embedded). */
  readonly url: string;
  /** How the service was found, for the start-up summary and /healthz. */
  readonly source: ServiceSource;
  /** Stops what this process started; a no-op for external or borrowed services. */
  stop(): Promise<void>;
}

export type ServiceSource =
  | 'external' // URL given in the environment
  | 'embedded' // started by this process
  | 'shared' // started by another Ledgerfeed process with the same DATA_DIR (stack.json)
  | 'local'; // a server already answering on its standard local port

export const noStop = async (): Promise<void> => {};
