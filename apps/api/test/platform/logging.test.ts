import { Writable } from 'node:stream';
import request from 'supertest';
import winston from 'winston';
import { createLogger } from '@teamchat/core';
import { createApp } from '../../src/app';
import { bearer, newAccount, newKey, startHarness, type Harness } from '../../../../test/support/harness';

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

/** A real winston logger (our format) writing its JSON lines into an array. */
function capturingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger('api', 'info');
  logger.clear().add(new winston.transports.Stream({
    stream: new Writable({ write(chunk, _enc, done) { lines.push(JSON.parse(String(chunk))); done(); } }),
  }));
  return { logger, lines };
}

test('every log line of a request is JSON with its request_id, and no credential is ever written', async () => {
  const a = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, ['account:manage']);
  const { logger, lines } = capturingLogger();
  const app = createApp({ ...h.deps, logger }, 'api');
  const res = await request(app).get(`/accounts/${a.accountId}`).set(bearer(key)).set('X-Request-Id', 'trace-logging-0001');
  expect(res.status).toBe(200);
  expect(lines.length).toBeGreaterThan(0);
  for (const line of lines) expect(line.request_id).toBe('trace-logging-0001');
  expect(JSON.stringify(lines)).not.toContain(key);
});

test('fields named like secrets are redacted by the log format itself', () => {
  const { logger, lines } = capturingLogger();
  logger.info('debugging', { authorization: 'Bearer tc_key_x', password: 'hunter2', token: 't', user: 'kept' });
  expect(lines[0]).toMatchObject({ authorization: '[redacted]', password: '[redacted]', token: '[redacted]', user: 'kept' });
});
