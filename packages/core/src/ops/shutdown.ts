import type { Server, ServerResponse } from 'node:http';
import { constants } from 'node:os';
import type { Logger } from '../logger';

let shuttingDown = false;

/** True once this process received SIGTERM/SIGINT: /readyz answers 503 so load balancers stop sending. */
export function isShuttingDown(): boolean {
  return shuttingDown;
}

export interface ShutdownStep {
  name: string;
  run: () => Promise<unknown> | unknown;
}

export interface ShutdownOptions {
  logger: Logger;
  /** the steps in order: stop taking work, finish or hand back what is in flight, close pools and Redis */
  steps: ShutdownStep[];
  /** past this the process exits with 1 anyway (ms) */
  timeoutMs: number;
  signals?: NodeJS.Signals[];
}

/**
 * Graceful shutdown for an entrypoint. The first SIGTERM (or SIGINT) runs the steps in order and
 * exits 0 (1 if a step failed or the timeout passed); a second signal exits at once with
 * 128 + the signal number, as a shell would report it.
 */
export function onShutdownSignals(options: ShutdownOptions): void {
  const signals = options.signals ?? ['SIGTERM', 'SIGINT'];
  const log = options.logger;
  const handler = (signal: NodeJS.Signals) => {
    if (shuttingDown) {
      log.warn('second signal: exiting now', { signal });
      process.exit(128 + (constants.signals[signal] ?? 15));
    }
    shuttingDown = true;
    log.info('shutting down', { signal, timeout_ms: options.timeoutMs });
    const timer = setTimeout(() => {
      log.error('shutdown timed out: exiting with work unfinished', { timeout_ms: options.timeoutMs });
      process.exit(1);
    }, options.timeoutMs);
    timer.unref();
    void runSteps(options.steps, log).then((ok) => {
      log.info('shut down', { ok });
      process.exit(ok ? 0 : 1);
    });
  };
  for (const s of signals) process.on(s, handler);
}

async function runSteps(steps: ShutdownStep[], log: Logger): Promise<boolean> {
  let ok = true;
  for (const step of steps) {
    try {
      await step.run();
      log.info('shutdown step done', { step: step.name });
    } catch (err) {
      ok = false;
      log.error('shutdown step failed', { step: step.name, error: (err as Error).message });
    }
  }
  return ok;
}

/**
 * Wraps a listening HTTP server for shutdown: `close()` stops accepting connections, closes idle
 * keep-alive connections, lets requests in flight finish (their responses carry
 * `Connection: close`) and resolves once the last one is done.
 */
export function drainable(server: Server): { close(): Promise<void> } {
  const inFlight = new Set<ServerResponse>();
  let closing = false;
  // Before the app's own listener: the app may answer at once (a probe), and a header
  // set after the answer would throw out of the server's event: the process would crash
  // mid-drain instead of finishing the requests in flight.
  server.prependListener('request', (_req, res: ServerResponse) => {
    if (closing && !res.headersSent) res.setHeader('Connection', 'close');
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
  });
  return {
    close() {
      closing = true;
      for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
      return new Promise<void>((resolve, reject) => {
        if (!server.listening) {
          resolve();
          return;
        }
        server.close((err) => (err ? reject(err) : resolve()));
      });
    },
  };
}
