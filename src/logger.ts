import pino, { type Logger } from 'pino';
import type { Config } from './config/index.js';
import { redactUrls } from './url-redaction.js';

/**
 * JSON lines for machines (production, pipes); one coloured line per event for a person at a
 * terminal. Secrets in URLs are never logged: every message string and every logged error's
 * message and stack pass through redactUrls (an RPC client's error may quote its endpoint, key
 * and all), and the startup summary redacts the URLs it prints.
 */
export function createLogger(config: Config, destination?: pino.DestinationStream): Logger {
  const pretty = !destination && config.NODE_ENV !== 'production' && process.stdout.isTTY;
  const options: pino.LoggerOptions = {
    level: config.LOG_LEVEL,
    base: { pid: process.pid },
    redact: ['req.headers.authorization', '*.apiKey', '*.secret'],
    serializers: { err: redactedError },
    hooks: {
      logMethod(args, method) {
        method.apply(
          this,
          args.map((arg) => (typeof arg === 'string' ? redactUrls(arg) : arg)) as Parameters<typeof method>,
        );
      },
    },
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

/** pino's error serializer, with URLs in the message and stack redacted. */
function redactedError(error: Error): pino.SerializedError {
  const shown = pino.stdSerializers.err(error);
  // pino hands over whatever was logged under `err`; only an error has text to redact.
  if (typeof shown?.message !== 'string') return shown;
  return {
    ...shown,
    message: redactUrls(shown.message),
    ...(shown.stack ? { stack: redactUrls(shown.stack) } : {}),
  };
}
