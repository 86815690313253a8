import type { Database, Tx } from '@teamchat/db';
import type { Deps } from '../context';
import { EVENTS_CHANNEL } from './record';

/**
 * The notification a wake-up sends, in a transaction of its own: asynchronous commit, so it
 * holds the cluster-wide lock PostgreSQL takes for every transaction that notifies (held from
 * before its commit record until the commit returns) for no WAL flush. A notification that a
 * crash loses costs only the relay's poll: the rows it announces are committed already.
 */
function notifyText(channel: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`not a channel name: ${channel}`);
  return `SET LOCAL synchronous_commit = off; SELECT pg_notify('${channel}', '')`;
}

/**
 * RELAY WAKE-UPS after every commit of outbox rows (docs/webhooks.md "The delivery engine", 1).
 * A NOTIFY inside the writing transaction holds PostgreSQL's notify lock (one for the whole
 * cluster) through that transaction's commit and WAL flush, so every notifying commit waited for
 * the one before it (no group commit; message posts over 8 channels 1,349-1,649 posts/s with it,
 * 1,507-1,622 after the commit, docs/performance.md "A post's notification after its commit").
 * Here the notification goes after the commit, one at a time per process: wake-ups asked for
 * while one is on its way fold into one more, sent once it is back, so a busy API sends about
 * one per round trip, not one per write. It reaches the relay one round trip after the commit.
 *
 * Only where someone listens: behind PgBouncer in transaction mode without DATABASE_DIRECT_URL
 * the relay does not LISTEN (it polls), and nothing is sent (`listening` false).
 */
export class RelayWakeUps {
  private sending = false;
  private again = false;

  constructor(
    private readonly send: () => Promise<unknown>,
    private readonly listening: boolean,
    private readonly onError: (err: Error) => void,
  ) {}

  /** Outbox rows have just committed: wake the relay (never waits, never throws). */
  committed(): void {
    if (!this.listening) return;
    if (this.sending) {
      this.again = true;
      return;
    }
    this.sending = true;
    // Through a promise: a send that threw at once would otherwise leave `sending` set for good.
    Promise.resolve()
      .then(() => this.send())
      .catch((err: Error) => this.onError(err))
      .finally(() => {
        this.sending = false;
        if (this.again) {
          this.again = false;
          this.committed();
        }
      });
  }
}

/** A process's wake-ups, sent on its pool (a connection for one round trip each); `channel` EVENTS_CHANNEL but in tests. */
export function relayWakeUpsOn(pool: Database['pool'], listening: boolean, onError: (err: Error) => void, channel = EVENTS_CHANNEL): RelayWakeUps {
  const text = notifyText(channel);
  return new RelayWakeUps(() => pool.query(text), listening, onError);
}

/**
 * Runs `work` in one transaction whose writes may record outbox rows (recordEvents), and wakes
 * the relay once it has committed (a rolled-back one wakes nothing). A wake-up for a
 * transaction that recorded nothing costs the relay one scan that finds nothing.
 */
export async function outboxTransaction<T>(deps: Pick<Deps, 'database' | 'relayWakeUps'>, work: (tx: Tx) => Promise<T>): Promise<T> {
  const out = await deps.database.db.transaction(work);
  deps.relayWakeUps.committed();
  return out;
}

/** For a process or a step whose writes are never committed (the API's warm-up posts). */
export const NO_RELAY_WAKE_UPS = new RelayWakeUps(() => Promise.resolve(), false, () => undefined);
