import { Writable } from 'node:stream';
import winston from 'winston';
import { createLogger, deliveryLogger } from '../src/logger';

test('worker log lines carry event_id, delivery_id and endpoint_id, and still redact secrets', () => {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger('worker', 'info');
  logger.clear().add(new winston.transports.Stream({
    stream: new Writable({ write(chunk, _enc, done) { lines.push(JSON.parse(String(chunk))); done(); } }),
  }));
  const log = deliveryLogger(logger, { eventId: 'evt_1', deliveryId: 'dlv_1', endpointId: 'whe_1' });
  log.info('attempt', { status: 200, secret: 'whsec_x' });
  expect(lines[0]).toMatchObject({ service: 'worker', event_id: 'evt_1', delivery_id: 'dlv_1', endpoint_id: 'whe_1', status: 200, secret: '[redacted]' });
  expect(lines[0]).not.toHaveProperty('account_id');
});
