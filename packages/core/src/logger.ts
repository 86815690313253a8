import winston from 'winston';
import { StdoutTransport } from './stdout-transport';

/** Field names whose values are never written to a log line. */
const SECRET_FIELDS = /^(authorization|cookie|password|token|session_token|key|secret|csrf_token|x-csrf-token)$/i;

const redact = winston.format((info) => {
  for (const field of Object.keys(info)) {
    if (SECRET_FIELDS.test(field)) info[field] = '[redacted]';
  }
  return info;
});

export type Logger = winston.Logger;

/** JSON logs to stdout. Child loggers carry `request_id` (API) or `job_id` (worker) on every line. */
export function createLogger(service: string, level = 'info'): Logger {
  return winston.createLogger({
    level,
    defaultMeta: { service },
    format: winston.format.combine(redact(), winston.format.timestamp(), winston.format.json()),
    transports: [new StdoutTransport({ silent: level === 'silent' })],
  });
}
