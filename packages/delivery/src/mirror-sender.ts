import type { Deps } from '@teamchat/core';
import type { Dispatcher } from './dispatcher';
import { dueMirrors, runMirrorSend } from './mirror-send';
import type { WebhookTransport } from './transport';

/** How often the sender looks for mirrors with something due (docs/mirrors.md "Sending"); default 200 ms. */
export const MIRROR_SCAN_MS = 200;
/** Mirrors one process has handed to its dispatcher at once (each sends one message at a time). */
export const MIRROR_CONCURRENCY = 32;

export interface MirrorSenderOptions {
  scanMs?: number;
  /** only these accounts' mirrors (tests that share one database); default all */
  accountIds?: readonly string[];
}

/** The dispatcher row of a mirror's next send (never a delivery id: those start `dlv_`). */
export const mirrorRowId = (mirrorId: string) => `mirror:${mirrorId}`;

/**
 * The mirror sender of a worker process: scans for mirrors whose pace allows a message and that
 * have lines waiting or a send due, and hands one send step for each to the process's
 * DISPATCHER as a row of the mirror's account, the mirror its endpoint (docs/webhooks.md "The
 * delivery engine"): it waits in the account's lane, takes turns with the account's webhook
 * endpoints, and runs on one of the account's in-flight slots (core runMirrorSend: claim the
 * mirror, send its next message on the engine's transport, record, pace). A mirror is claimed in
 * the database, so several worker processes never send for one mirror at once.
 */
export function startMirrorSender(
  deps: Deps, dispatcher: Dispatcher, transport: WebhookTransport, options: MirrorSenderOptions = {},
): { stop(): Promise<void> } {
  /** mirrors handed to the dispatcher and not yet settled */
  const busy = new Set<string>();
  const running = new Set<Promise<void>>();
  let scanning = false;
  let stopped = false;

  const send = (mirrorId: string) => () => {
    const p: Promise<void> = runMirrorSend(deps, transport, mirrorId, { slotHeld: true })
      .then(
        () => undefined,
        (err: Error) => {
          deps.logger.warn('mirror send failed', { mirror_id: mirrorId, error: err.message });
        },
      )
      .finally(() => {
        busy.delete(mirrorId);
        running.delete(p);
      });
    running.add(p);
    return p;
  };

  const scan = async () => {
    if (scanning || stopped) return;
    scanning = true;
    try {
      const room = MIRROR_CONCURRENCY - busy.size;
      if (room <= 0) return;
      const due = await dueMirrors(deps.database.db, deps.now(), room + busy.size, options.accountIds);
      for (const { id, accountId } of due) {
        if (stopped || busy.has(id) || busy.size >= MIRROR_CONCURRENCY) continue;
        busy.add(id);
        // Not taken (the account's lane is full, or the dispatcher is closing): the next scan tries again.
        if (dispatcher.submit([{ id: mirrorRowId(id), accountId, endpointId: id, send: send(id) }]) === 0) busy.delete(id);
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
    /** Scans no more and waits for the sends already on the wire (those still waiting are the dispatcher's to forget on close). */
    async stop() {
      stopped = true;
      clearInterval(timer);
      await Promise.all([...running]);
    },
  };
}
