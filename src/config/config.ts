import path from 'node:path';
import { crossCheckEnv, envSchema, type Env } from './env.schema.js';

export type Config = Readonly<
  Env & {
    /** DATA_DIR resolved against the working directory at start-up. */
    dataDir: string;
  }
>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Parses the environment once. A wrong value fails here, at start-up, naming each variable and
 * what it expected, rather than later as a confusing connection error.
 */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): Config {
  const parsed = envSchema.superRefine(crossCheckEnv).safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const name = issue.path.join('.');
      const raw = env[name];
      return `  ${name}: ${issue.message}${raw === undefined ? '' : ` (got ${JSON.stringify(raw)})`}`;
    });
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return Object.freeze({ ...parsed.data, dataDir: path.resolve(parsed.data.DATA_DIR) });
}

/** The one place that reads `process.env`; everything else receives a Config. */
export function readConfig(): Config {
  return loadConfig(process.env);
}
