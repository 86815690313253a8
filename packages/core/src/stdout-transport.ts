import type { Writable } from 'node:stream';
import winston from 'winston';

/** winston's transport base class (winston-transport, a Writable), as winston exports it at runtime. */
const TransportBase = (winston as unknown as {
  Transport: new (options?: { level?: string; silent?: boolean }) => Writable & { level?: string; silent?: boolean };
}).Transport;

/** The formatted line winston's formats leave on each info object (triple-beam's MESSAGE). */
const MESSAGE = Symbol.for('message');

/**
 * Log lines formatted but not yet written: written together at the end of the event loop's turn
 * (`setImmediate`), one system call for all the lines of a turn instead of one each. A busy API
 * process answers several requests a turn, and a request's log line written by itself cost 5 % of
 * its CPU with stdout a file (docs/performance.md "Posts of one turn in one statement"). Lines
 * keep their order; on exit, whatever is left is written at once (stdout is synchronous for files,
 * pipes and terminals on Linux, so it is written before the process ends).
 */
const pending: string[] = [];
let scheduled = false;

/** Writes the lines waiting for the end of the turn now (tests, and the process's exit). */
export function flushLogLines(): void {
  scheduled = false;
  if (pending.length === 0) return;
  const text = pending.join('');
  pending.length = 0;
  process.stdout.write(text);
}

process.on('exit', flushLogLines);

/**
 * winston's Console transport, minus its per-line costs (cheap request logging; its cost counts in docs/performance.md):
 * Console emits a `logged` event through a setImmediate for every line and goes through
 * console._stdout; this hands the formatted line to the turn's write above. Same JSON lines, same
 * destination, same order. About 8 µs a line instead of 18 (child logger + info, measured on the
 * bench machine), before the write.
 */
export class StdoutTransport extends TransportBase {
  log(info: Record<string | symbol, unknown>, callback: () => void): void {
    pending.push(`${info[MESSAGE] as string}\n`);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flushLogLines);
    }
    callback();
  }
}
