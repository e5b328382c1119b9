import pino, { type Logger } from 'pino';
import type { Config } from './config/index.js';

/**
 * JSON lines for machines (production, pipes); one coloured line per event for a person at a
 * terminal. Secrets in URLs are never logged: the summary redacts them before printing.
 */
export function createLogger(config: Config, destination?: pino.DestinationStream): Logger {
  const pretty = !destination && config.NODE_ENV !== 'production' && process.stdout.isTTY;
  const options: pino.LoggerOptions = {
    level: config.LOG_LEVEL,
    base: { pid: process.pid },
    redact: ['req.headers.authorization', '*.apiKey', '*.secret'],
  };
  if (pretty) {
    return pino({
      ...options,
      transport: {
        target: 'pino-pretty',
        options: { translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true },
      },
    });
  }
  return destination ? pino(options, destination) : pino(options);
}
