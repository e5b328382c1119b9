/** A command line the CLI cannot run: main.ts prints the message and the usage, and exits 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}
