import type { Logger } from '../logger';

/**
 * Node's process warnings (deprecations, a listener leak, an experimental feature) as the
 * process's other log lines: JSON on stdout at `warn`, with the warning's name and code, instead
 * of Node's plain text on stderr, which log collectors reading JSON lines cannot parse. Node's own
 * printer is one listener of 'warning' that it adds at start; it is taken off so each warning is
 * written once. Called by each entrypoint once its logger exists (docs/operations.md "Logs").
 */
export function logProcessWarnings(logger: Logger): void {
  process.removeAllListeners('warning');
  process.on('warning', (warning: Error & { code?: string }) => {
    logger.warn('process warning', { warning: warning.name, code: warning.code ?? null, error: warning.message });
  });
}
