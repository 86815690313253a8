import type { Deps } from '@teamchat/core';
import { dueMirrors, runMirrorSend } from './mirror-send';
import type { WebhookTransport } from './transport';

/** How often the sender looks for mirrors with something due (docs/mirrors.md "Sending"); default 200 ms. */
export const MIRROR_SCAN_MS = 200;
/** Mirrors one process sends to at once (each sends one message at a time). */
export const MIRROR_CONCURRENCY = 32;

export interface MirrorSenderOptions {
  scanMs?: number;
  /** only these accounts' mirrors (tests that share one database); default all */
  accountIds?: readonly string[];
}

/**
 * The mirror sender of a worker process: scans for mirrors whose pace allows a message and that
 * have lines waiting or a send due, and runs one send step for each (core runMirrorSend: claim
 * the mirror, send its next message on the webhook transport, record, pace). A mirror is
 * claimed in the database, so several worker processes never send for one mirror at once.
 */
export function startMirrorSender(deps: Deps, transport: WebhookTransport, options: MirrorSenderOptions = {}): { stop(): Promise<void> } {
  const busy = new Set<string>();
  const running = new Set<Promise<void>>();
  let scanning = false;
  let stopped = false;

  const scan = async () => {
    if (scanning || stopped) return;
    scanning = true;
    try {
      const room = MIRROR_CONCURRENCY - busy.size;
      if (room <= 0) return;
      const ids = await dueMirrors(deps.database.db, deps.now(), room + busy.size, options.accountIds);
      for (const id of ids) {
        if (busy.has(id) || busy.size >= MIRROR_CONCURRENCY) continue;
        busy.add(id);
        const p: Promise<void> = runMirrorSend(deps, transport, id)
          .then(
            () => undefined,
            (err: Error) => {
              deps.logger.warn('mirror send failed', { mirror_id: id, error: err.message });
            },
          )
          .finally(() => {
            busy.delete(id);
            running.delete(p);
          });
        running.add(p);
      }
    } catch (err) {
      deps.logger.warn('mirror scan failed', { error: (err as Error).message });
    } finally {
      scanning = false;
    }
  };
  const timer = setInterval(() => void scan(), options.scanMs ?? MIRROR_SCAN_MS);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await Promise.all([...running]);
    },
  };
}
