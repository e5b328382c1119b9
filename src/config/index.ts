export { loadConfig, readConfig, ConfigError, type Config } from './config.js';
export { envSchema, type Env } from './env.schema.js';
