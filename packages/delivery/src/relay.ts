import { createHash } from 'node:crypto';
import { listen } from '@teamchat/db';
import { EVENTS_CHANNEL, listenDatabaseUrl, randomToken, RedisScript, relayLeaseKey, throttledWarning, waitReady, type Deps } from '@teamchat/core';
import { unrelayedEvents, unrelayedEventsRead } from './fan-out';
import type { FanOutRead } from './statements';
import { FANOUT_BATCH, type WebhookQueues } from './queues';

/**
 * The outbox relay: moves unrelayed `events` rows, in `seq` order, into fan-out jobs whose job
 * id is the event id. The fan-out job marks the row relayed in the transaction that writes its
 * deliveries, so a row stays unrelayed (and is handed over again) until its deliveries exist:
 * if Redis is down, or loses the job, the row simply waits and flows once Redis is back; a row
 * handed over twice fans out once (job id, then the row's relayed_at under a row lock).
 *
 * Wake-up: every commit of outbox rows is followed by a notification on EVENTS_CHANNEL (core
 * RelayWakeUps and outboxTransaction, docs/webhooks.md "The delivery engine", 1); the relay LISTENs on
 * a connection of its own and scans at once (a notification during a scan makes one more scan
 * right after it, so notifications under load fold into full batches). The poll (`pollMs`) is
 * only the safety net (a notification lost with the listening connection, rows written by hand);
 * scans go on at once while batches come back full.
 *
 * Two kinds of scan. A FULL scan reads the first `batch` unrelayed rows from the start: it finds
 * every row, including one whose transaction committed after rows with a higher seq (seq is
 * taken at insert, not at commit) and rows handed over `resendAfterMs` ago and still unrelayed.
 * While caught up (the last scan came back short) every scan is a full one, and cheap. During a
 * backlog the first `batch` unrelayed rows are all handed over already, and reading them again
 * every poll cost more than the hand-over itself (~9 rows read per event in the webhooks bench):
 * then the relay reads only rows after the highest seq it handed over (a CURSOR scan), hands
 * nothing more over while MAX_WAITING_FANOUTS jobs wait (one Redis command, no query), and makes
 * a full scan every FULL_SCAN_MS, which still finds late commits and rows to hand over again.
 *
 * One relay at a time: every worker process runs one, but only the holder of a Redis lease
 * (RELAY_LEASE_MS, renewed every second) scans; the others try for the lease every second. Two
 * relays would hand the same rows over in differently cut batches, each fanned out by the first
 * job to reach it and read and rendered in vain by the other. A dead holder's lease runs out and
 * another process takes over within RELAY_LEASE_MS; a row handed over twice still fans out once.
 */
export const RELAY_LEASE_MS = 5_000;
/** During a backlog, a full scan at least this often (late commits, rows to hand over again). */
export const FULL_SCAN_MS = 250;
/** Fan-out jobs waiting beyond which a backlogged relay hands nothing more over (each job up to FANOUT_BATCH events). */
export const MAX_WAITING_FANOUTS = 16;
const RELAY_RENEW_MS = 1_000;

/** KEYS[1] the lease; ARGV[1] our token, ARGV[2] ms. Takes a free lease or renews ours: 1, else 0. */
const TAKE_OR_RENEW = new RedisScript(`
local v = redis.call('GET', KEYS[1])
if v == false or v == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
  return 1
end
return 0
`);
/** KEYS[1] the lease; ARGV[1] our token: gives the lease back if we hold it. */
const GIVE_BACK = new RedisScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`);
export interface RelayOptions {
  /** pause between scans when nothing woke the relay and the last scan found no full batch (the safety net); default 100 ms */
  pollMs?: number;
  /** rows per scan; default 500 */
  batch?: number;
  /** a row still unrelayed this long after it was handed over is handed over again; default 10 s */
  resendAfterMs?: number;
  /** only these accounts' events (tests that share one database); default all */
  accountIds?: readonly string[];
  /**
   * Fans events out in this process (the engine's fan-out and dispatcher). Given, a relay that
   * is caught up fans a scan's rows out itself when they fit one fan-out batch, with no queue
   * hop; a larger scan (a backlog) goes to fan-out jobs, which every worker process shares.
   * Default: always fan-out jobs.
   */
  fanOutHere?: (eventIds: string[], read?: FanOutRead[]) => Promise<unknown>;
}

export interface Relay {
  /** whether this relay holds the lease (scans) as of its last check */
  leading(): boolean;
  stop(): Promise<void>;
}

export function startRelay(deps: Deps, queues: WebhookQueues, options: RelayOptions = {}): Relay {
  const pollMs = options.pollMs ?? 100;
  const batch = options.batch ?? 500;
  const resendAfterMs = options.resendAfterMs ?? 10_000;
  /** events handed over and not yet seen relayed: when, and their seq */
  const handedOver = new Map<string, { at: number; seq: number }>();
  /** the highest seq handed over (the cursor scans' start) */
  let frontier = -1;
  let caughtUp = true;
  let lastFull = 0;
  let stopped = false;
  // Redis or the database away: the rows wait; said at most every 10 s.
  const handOverFailed = throttledWarning(deps.logger, 'relay could not hand events over; they wait');
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  const scope = options.accountIds ? `:${createHash('sha1').update([...options.accountIds].sort().join(',')).digest('hex').slice(0, 16)}` : '';
  const leaseKey = relayLeaseKey(deps.config, scope);
  const token = randomToken(12);
  let leaseUntil = 0;
  let checkedAt = 0;

  /** Whether this relay may scan now: it holds the lease (renewed at most every second). */
  const holdLease = async (): Promise<boolean> => {
    const now = Date.now();
    if (now - checkedAt < RELAY_RENEW_MS) return now < leaseUntil;
    checkedAt = now;
    const held = (await TAKE_OR_RENEW.run<number>(deps.redis, [leaseKey], [token, RELAY_LEASE_MS])) === 1;
    leaseUntil = held ? now + RELAY_LEASE_MS - RELAY_RENEW_MS : 0;
    return held;
  };

  const scan = async (): Promise<boolean> => {
    if (!(await holdLease())) return false;
    const now = Date.now();
    const full = caughtUp || now - lastFull >= FULL_SCAN_MS;
    if (!full && (await queues.waitingFanouts()) >= MAX_WAITING_FANOUTS) return false;
    // Caught up (the usual case at low load), the scan reads what the fan-out needs too, so the
    // relay's own fan-out of it takes no second read.
    const read = full && caughtUp && options.fanOutHere ? await unrelayedEventsRead(deps.database.db, batch, options.accountIds) : null;
    const rows = read
      ? read.map((r) => ({ id: r.id, seq: Number(r.seq) }))
      : await unrelayedEvents(deps.database.db, batch, { accountIds: options.accountIds, after: full ? undefined : frontier });
    caughtUp = rows.length < batch;
    let due = rows;
    if (full) {
      lastFull = now;
      // Handed-over rows this scan covers and did not return are relayed now: forget them.
      const seen = new Set(rows.map((r) => r.id));
      const covered = caughtUp ? Infinity : rows[rows.length - 1].seq;
      for (const [id, h] of handedOver) if (h.seq <= covered && !seen.has(id)) handedOver.delete(id);
      due = rows.filter((r) => {
        const h = handedOver.get(r.id);
        return h === undefined || now - h.at >= resendAfterMs;
      });
    }
    if (due.length > 0 && options.fanOutHere && caughtUp && due.length <= FANOUT_BATCH) {
      // Latency first while the load is low: no queue hop. The events stay unrelayed until this
      // write commits; if it fails they are scanned again (the loop backs off).
      const ids = due.map((r) => r.id);
      const dueIds = new Set(ids);
      await options.fanOutHere(ids, read?.filter((r) => dueIds.has(r.id)));
      for (const r of due) if (r.seq > frontier) frontier = r.seq;
      return false;
    }
    if (due.length > 0) {
      await queues.enqueueFanout(due.map((r) => r.id));
      for (const r of due) {
        handedOver.set(r.id, { at: now, seq: r.seq });
        if (r.seq > frontier) frontier = r.seq;
      }
    }
    return !caughtUp && due.length > 0;
  };

  let scanning = false;
  let woken = false;
  const loop = () => {
    if (stopped) return;
    timer = null;
    scanning = true;
    woken = false;
    running = scan()
      .then((more) => {
        scanning = false;
        schedule(more || woken ? 0 : pollMs);
      })
      .catch((err: Error) => {
        scanning = false;
        handOverFailed(err);
        schedule(Math.max(pollMs, 250));
      });
  };
  let immediate: NodeJS.Immediate | null = null;
  const schedule = (ms: number) => {
    if (stopped) return;
    if (timer) clearTimeout(timer);
    timer = null;
    if (ms > 0) {
      if (immediate) return; // a scan is already due at once
      timer = setTimeout(loop, ms);
      return;
    }
    // At once: the next turn of the event loop (a 0 ms timer waits for the timers phase, ~1 ms).
    if (immediate) return;
    immediate = setImmediate(() => {
      immediate = null;
      loop();
    });
  };
  /** A commit of outbox rows: scan now, or right after the scan under way. */
  const wake = () => {
    if (stopped) return;
    if (scanning) woken = true;
    else schedule(0);
  };
  // No direct connection behind PgBouncer in transaction mode: the poll (pollMs) finds the rows.
  const listenUrl = listenDatabaseUrl(deps.config);
  const listener = listenUrl === null ? { close: async () => undefined } : listen(listenUrl, EVENTS_CHANNEL, wake, {
    onError: (err) => deps.logger.warn('relay lost its LISTEN connection; polling until it is back', { error: err.message }),
  });
  // The producer connection refuses commands until it is connected (enableOfflineQueue: false),
  // so a scan at boot failed with "Stream isn't writeable" on every healthy start: the first scan
  // waits for the connection (up to 5 s; a Redis still away then is reported by the scan itself).
  void waitReady(deps.redis).catch(() => undefined).then(() => schedule(0));

  return {
    leading: () => Date.now() < leaseUntil,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      if (immediate) clearImmediate(immediate);
      await listener.close();
      await running;
      // Hand the lease over at once rather than after it runs out.
      if (leaseUntil > 0) await GIVE_BACK.run(deps.redis, [leaseKey], [token]).catch(() => undefined);
    },
  };
}
