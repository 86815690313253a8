import { unrelayedEventIds, type Deps, type WebhookQueues } from '@teamchat/core';

/**
 * The outbox relay: moves unrelayed `events` rows, in `seq` order, into fan-out jobs whose job
 * id is the event id. The fan-out job marks the row relayed in the transaction that writes its
 * deliveries, so a row stays unrelayed (and is handed over again) until its deliveries exist:
 * if Redis is down, or loses the job, the row simply waits and flows once Redis is back; a row
 * handed over twice fans out once (job id, then the row's relayed_at under a row lock).
 *
 * Wake-up: a short poll on the partial index of unrelayed rows (an empty scan costs ~0.1 ms),
 * again at once while batches come back full. No trigger exists for LISTEN/NOTIFY without a
 * migration, and the poll keeps commit → job under `pollMs` (docs/webhooks.md, Delivery).
 */
export interface RelayOptions {
  /** pause between scans when the last one found no full batch; default 20 ms */
  pollMs?: number;
  /** rows per scan; default 500 */
  batch?: number;
  /** a row still unrelayed this long after it was handed over is handed over again; default 10 s */
  resendAfterMs?: number;
  /** only these accounts' events (tests that share one database); default all */
  accountIds?: readonly string[];
}

export interface Relay {
  stop(): Promise<void>;
}

export function startRelay(deps: Deps, queues: WebhookQueues, options: RelayOptions = {}): Relay {
  const pollMs = options.pollMs ?? 20;
  const batch = options.batch ?? 500;
  const resendAfterMs = options.resendAfterMs ?? 10_000;
  const handedOver = new Map<string, number>();
  let stopped = false;
  let lastWarn = 0;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;

  const scan = async (): Promise<boolean> => {
    const ids = await unrelayedEventIds(deps.database.db, batch, options.accountIds);
    const now = Date.now();
    const seen = new Set(ids);
    for (const id of handedOver.keys()) if (!seen.has(id)) handedOver.delete(id);
    const due = ids.filter((id) => {
      const at = handedOver.get(id);
      return at === undefined || now - at >= resendAfterMs;
    });
    if (due.length > 0) {
      await queues.enqueueFanout(due);
      for (const id of due) handedOver.set(id, now);
    }
    return ids.length === batch && due.length > 0;
  };

  const loop = () => {
    if (stopped) return;
    running = scan()
      .then((more) => schedule(more ? 0 : pollMs))
      .catch((err: Error) => {
        // Redis or the database away: the rows wait; say so at most every 10 s.
        if (Date.now() - lastWarn > 10_000) {
          lastWarn = Date.now();
          deps.logger.warn('relay could not hand events over; they wait', { error: err.message });
        }
        schedule(Math.max(pollMs, 250));
      });
  };
  const schedule = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(loop, ms);
  };
  schedule(0);

  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
