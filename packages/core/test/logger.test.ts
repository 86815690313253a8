/**
 * Logs (CONVENTIONS: winston JSON lines to stdout, never a secret) through the cheap stdout
 * transport (docs/performance.md): one line per call, in order, levels and silence respected.
 */
import { createLogger, throttledWarning } from '@teamchat/core';

function captureStdout(fn: () => void): string[] {
  const chunks: string[] = [];
  const write = process.stdout.write;
  process.stdout.write = ((chunk: string | Uint8Array) => {
    chunks.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  try {
    fn();
  } finally {
    process.stdout.write = write;
  }
  return chunks;
}

test('one JSON line per call on stdout, synchronously and in order, with the child fields; a secret field is redacted', () => {
  const logger = createLogger('api', 'info');
  const out = captureStdout(() => {
    const child = logger.child({ request_id: 'req_1', host: 'api' });
    child.info('request', { status: 200, token: 'tc_key_secret' });
    child.warn('second');
    child.debug('below the level');
  });
  expect(out).toHaveLength(2);
  for (const line of out) expect(line.endsWith('\n')).toBe(true);
  const [first, second] = out.map((l) => JSON.parse(l));
  expect(first).toMatchObject({ level: 'info', message: 'request', status: 200, request_id: 'req_1', host: 'api', service: 'api', token: '[redacted]' });
  expect(typeof first.timestamp).toBe('string');
  expect(second).toMatchObject({ level: 'warn', message: 'second', request_id: 'req_1' });
});

test('LOG_LEVEL silent writes nothing', () => {
  const logger = createLogger('api', 'silent');
  expect(captureStdout(() => { logger.error('nothing'); logger.info('nothing'); })).toEqual([]);
});

test('a throttled warning is written once per period, however often its failure repeats', () => {
  const logger = createLogger('worker', 'info');
  const warn = throttledWarning(logger, 'relay could not hand events over; they wait', 60_000);
  const out = captureStdout(() => { for (let i = 0; i < 5; i += 1) warn(new Error(`down ${i}`)); });
  expect(out.map((l) => JSON.parse(l))).toEqual([expect.objectContaining({ level: 'warn', message: 'relay could not hand events over; they wait', error: 'down 0' })]);
  const every = throttledWarning(logger, 'each time', 0);
  expect(captureStdout(() => { every(new Error('a')); every(new Error('b')); })).toHaveLength(2);
});
