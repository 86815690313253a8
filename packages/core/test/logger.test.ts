/**
 * Logs (CONVENTIONS: winston JSON lines to stdout, never a secret) through the cheap stdout
 * transport (docs/performance.md): one line per call, in order, levels and silence respected.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { createLogger, flushLogLines, throttledWarning } from '@teamchat/core';

/** Records each write to stdout, as written, instead of writing it, until `restore`. */
function recordStdout(): { writes: string[]; restore: () => void } {
  const writes: string[] = [];
  const write = process.stdout.write;
  process.stdout.write = ((chunk: string | Uint8Array) => {
    writes.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  return { writes, restore: () => { process.stdout.write = write; } };
}

/** The lines `fn` logs, as written to stdout (the turn's lines flushed before the capture ends). */
function captureStdout(fn: () => void): string[] {
  const out = recordStdout();
  try {
    fn();
    flushLogLines();
  } finally {
    out.restore();
  }
  return out.writes.join('').split(/(?<=\n)/).filter(Boolean);
}

test('one JSON line per call on stdout, in order, with the child fields; a secret field is redacted', () => {
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

test("the lines of one turn reach stdout in one write at the turn's end, in order", async () => {
  const logger = createLogger('api', 'info');
  const out = recordStdout();
  try {
    for (let i = 0; i < 5; i += 1) logger.info(`line ${i}`);
    expect(out.writes).toEqual([]);
    await new Promise((r) => setImmediate(r));
    logger.info('next turn');
    await new Promise((r) => setImmediate(r));
  } finally {
    out.restore();
  }
  expect(out.writes).toHaveLength(2);
  expect(out.writes[0].split('\n').filter(Boolean).map((l) => JSON.parse(l).message)).toEqual(['line 0', 'line 1', 'line 2', 'line 3', 'line 4']);
  expect(JSON.parse(out.writes[1]).message).toBe('next turn');
});

test('lines still waiting for their turn are written when the process exits', () => {
  const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', `
    const { createLogger } = require('@teamchat/core');
    createLogger('api', 'info').info('last words');
    process.exit(0);
  `], { cwd: path.join(__dirname, '..', '..', '..'), encoding: 'utf8' });
  expect(JSON.parse(out.trim()).message).toBe('last words');
});

test('a process warning is one JSON line on stdout, not plain text on stderr', () => {
  const child = spawnSync(process.execPath, ['--import', 'tsx', '-e', `
    const { createLogger, logProcessWarnings } = require('@teamchat/core');
    logProcessWarnings(createLogger('worker', 'info'));
    process.emitWarning('something is off', { code: 'TC_TEST', type: 'DeprecationWarning' });
    setImmediate(() => process.exit(0));
  `], { cwd: path.join(__dirname, '..', '..', '..'), encoding: 'utf8' });
  expect(child.status).toBe(0);
  expect(child.stderr).toBe('');
  const lines = child.stdout.trim().split('\n').map((l) => JSON.parse(l));
  expect(lines).toEqual([expect.objectContaining({ level: 'warn', message: 'process warning', warning: 'DeprecationWarning', code: 'TC_TEST', error: 'something is off', service: 'worker' })]);
});
