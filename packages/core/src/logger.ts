import winston from 'winston';
import { StdoutTransport } from './stdout-transport';

export { flushLogLines } from './stdout-transport';

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

/**
 * A warning for a failure that repeats while its cause lasts (a lost connection, a refused
 * hand-over): written at most once per `everyMs`, so an outage is said without flooding the log.
 */
export function throttledWarning(logger: Logger, message: string, everyMs = 10_000): (error: Error) => void {
  let last = -Infinity;
  return (error) => {
    const now = Date.now();
    if (now - last < everyMs) return;
    last = now;
    logger.warn(message, { error: error.message });
  };
}

/** The ids a webhook log line carries so one delivery can be followed across attempts and workers. */
export interface DeliveryLogIds {
  eventId?: string;
  deliveryId?: string;
  endpointId?: string;
  accountId?: string;
}

/**
 * A child logger whose every line carries `event_id`, `delivery_id`, `endpoint_id` (and
 * `account_id`) when known, for the worker's webhook code: `deliveryLogger(deps.logger, ids).info('delivered', {...})`.
 * Never log a secret, a signature or a request body.
 */
export function deliveryLogger(logger: Logger, ids: DeliveryLogIds): Logger {
  const fields: Record<string, string> = {};
  if (ids.eventId) fields.event_id = ids.eventId;
  if (ids.deliveryId) fields.delivery_id = ids.deliveryId;
  if (ids.endpointId) fields.endpoint_id = ids.endpointId;
  if (ids.accountId) fields.account_id = ids.accountId;
  return logger.child(fields);
}
