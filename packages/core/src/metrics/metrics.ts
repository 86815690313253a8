import { degradedDecisionCounts } from '../limits/availability';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Queue } from 'bullmq';
import type { Pool } from 'pg';
import { readOutboxBacklog, readQueueDepths, QUEUE_STATES } from './collectors';

/**
 * Every Prometheus metric of the service, defined in this ONE place (docs/operations.md lists
 * them with what to alert on). One registry per process (per deps set), served only on the
 * operations port. Code increments through the deps: `deps.metrics.deliveriesTotal.inc({ outcome })`.
 *
 * Names follow Prometheus conventions: `teamchat_` prefix, `_total` for counters, base units
 * (`_seconds`), bounded label values (route templates, never raw paths).
 */

/** HTTP latency buckets (seconds): API answers are expected in milliseconds. */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** One webhook attempt (seconds): the receiver has 10 s; above 2 s a median makes an endpoint `slow`. */
const ATTEMPT_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15];
/** Event committed → receiver answered (seconds), retries included: up to about 45 hours. */
const END_TO_END_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 1800, 7200, 21_600, 86_400, 172_800];

/** One stage of one delivery (seconds): milliseconds when all is well, up to a minute when rows wait for slots. */
const STAGE_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** The stages of an event's first delivery (docs/webhooks.md "The delivery engine"). */
export type DeliveryStage = 'relay' | 'fan_out' | 'dispatch' | 'answer' | 'record';

/** Outcome label of deliveries and attempts (the spec's delivery statuses after an attempt). */
export type DeliveryOutcome = 'delivered' | 'retrying' | 'failed' | 'dead';

export function createMetrics() {
  const registry = new Registry();
  const r = [registry];
  let defaultsOn = false;
  const queues = new Map<string, Queue>();
  let outboxPool: Pool | null = null;
  let dispatcherStats: (() => { waiting: number; inFlight: number; accounts: number }) | null = null;
  // Both outbox gauges are collected concurrently in one scrape: they share one query.
  let outboxReading: ReturnType<typeof readOutboxBacklog> | null = null;
  const readOutbox = (pool: Pool) => {
    outboxReading ??= readOutboxBacklog(pool).finally(() => { outboxReading = null; });
    return outboxReading;
  };

  const collectErrorsTotal = new Counter({
    name: 'teamchat_metrics_collect_errors_total',
    help: 'Scrape-time collections that failed or timed out (the gauge then reads NaN), by collector.',
    labelNames: ['collector'] as const,
    registers: r,
  });

  const metrics = {
    registry,

    httpRequestsTotal: new Counter({
      name: 'teamchat_http_requests_total',
      help: 'HTTP requests answered, by host (api|web), method, route template and status code.',
      labelNames: ['host', 'method', 'route', 'status'] as const,
      registers: r,
    }),
    httpRequestDurationSeconds: new Histogram({
      name: 'teamchat_http_request_duration_seconds',
      help: 'Time from request to response finished, by host, method, route template and status code.',
      labelNames: ['host', 'method', 'route', 'status'] as const,
      buckets: HTTP_BUCKETS,
      registers: r,
    }),

    outboxBacklogEvents: new Gauge({
      name: 'teamchat_outbox_backlog_events',
      help: 'Event rows not yet relayed to the queues (capped at 100000), read at scrape time.',
      registers: r,
      async collect() {
        if (!outboxPool) return;
        try {
          this.set((await readOutbox(outboxPool)).events);
        } catch {
          collectErrorsTotal.inc({ collector: 'outbox' });
          this.set(NaN);
        }
      },
    }),
    outboxOldestAgeSeconds: new Gauge({
      name: 'teamchat_outbox_oldest_age_seconds',
      help: 'Age of the oldest unrelayed event row (0 when none), read at scrape time.',
      registers: r,
      async collect() {
        if (!outboxPool) return;
        try {
          this.set((await readOutbox(outboxPool)).oldestAgeSeconds);
        } catch {
          this.set(NaN);
        }
      },
    }),

    queueJobs: new Gauge({
      name: 'teamchat_queue_jobs',
      help: 'BullMQ jobs per queue and state (waiting, delayed, active, failed), read at scrape time from the queues this process uses.',
      labelNames: ['queue', 'state'] as const,
      registers: r,
      async collect() {
        await Promise.all([...queues.values()].map(async (queue) => {
          try {
            const counts = await readQueueDepths(queue);
            for (const state of QUEUE_STATES) this.set({ queue: queue.name, state }, counts[state] ?? 0);
          } catch {
            collectErrorsTotal.inc({ collector: `queue:${queue.name}` });
            for (const state of QUEUE_STATES) this.set({ queue: queue.name, state }, NaN);
          }
        }));
      },
    }),

    deliveriesTotal: new Counter({
      name: 'teamchat_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome: delivered (2xx), retrying (failed, another attempt scheduled), failed (failed, not retried: test events, disabled endpoint), dead (last attempt failed).',
      labelNames: ['outcome'] as const,
      registers: r,
    }),
    attemptDurationSeconds: new Histogram({
      name: 'teamchat_webhook_attempt_duration_seconds',
      help: 'Time of one webhook attempt, request sent to answer (or timeout), by outcome.',
      labelNames: ['outcome'] as const,
      buckets: ATTEMPT_BUCKETS,
      registers: r,
    }),
    endToEndSeconds: new Histogram({
      name: 'teamchat_webhook_end_to_end_seconds',
      help: 'Time from the event committed to the receiver answering 2xx (retries included), per delivered event and endpoint.',
      buckets: END_TO_END_BUCKETS,
      registers: r,
    }),
    deliveryStageSeconds: new Histogram({
      name: 'teamchat_webhook_stage_seconds',
      help: 'Where an event\'s first delivery spends its time, by stage: relay (event committed → its fan-out job starts), fan_out (the job\'s read, render and write), dispatch (rows written → the POST leaves: waiting for an in-flight slot, claim, charge, prepare), answer (POST → the receiver\'s answer or timeout), record (answer → recorded).',
      labelNames: ['stage'] as const,
      buckets: STAGE_BUCKETS,
      registers: r,
    }),
    dispatcherRows: new Gauge({
      name: 'teamchat_webhook_dispatcher_rows',
      help: 'Delivery rows in this worker process\'s dispatcher, by state: waiting (for an in-flight slot of their account) or in_flight (claimed, on the wire or being recorded), read at scrape time. Rows an account had beyond its lane stay open in the database and are not counted.',
      labelNames: ['state'] as const,
      registers: r,
      collect() {
        if (!dispatcherStats) return;
        const st = dispatcherStats();
        this.set({ state: 'waiting' }, st.waiting);
        this.set({ state: 'in_flight' }, st.inFlight);
      },
    }),
    dispatcherAccounts: new Gauge({
      name: 'teamchat_webhook_dispatcher_accounts',
      help: 'Accounts with delivery rows waiting or in flight in this worker process\'s dispatcher (its lanes), read at scrape time.',
      registers: r,
      collect() {
        if (dispatcherStats) this.set(dispatcherStats().accounts);
      },
    }),
    endpointsDisabledTotal: new Counter({
      name: 'teamchat_webhook_endpoints_disabled_total',
      help: 'Webhook endpoints disabled, by reason (failing, gone, slow, manual).',
      labelNames: ['reason'] as const,
      registers: r,
    }),

    limitRefusalsTotal: new Counter({
      name: 'teamchat_limit_refusals_total',
      help: 'Requests refused by a limit (429), by error code (rate_limited, budget_exceeded) and the scope named in the error.',
      labelNames: ['code', 'scope'] as const,
      registers: r,
    }),
    limitDegradedDecisionsTotal: new Counter({
      name: 'teamchat_limit_degraded_decisions_total',
      help: 'Limit decisions taken without Redis (it was unreachable), by limit (seat_per_minute, seat_units_per_day, sign_in, manual_delivery, mcp_sessions_per_seat) and decision (local_count, not_charged).',
      labelNames: ['limit', 'decision'] as const,
      registers: r,
      // Read at scrape time from the limits module's process-wide totals (packages/core/src/limits/availability.ts).
      collect() {
        const c = degradedDecisionCounts();
        this.reset();
        this.inc({ limit: 'seat_per_minute', decision: 'local_count' }, c.minute_limit_local);
        this.inc({ limit: 'seat_units_per_day', decision: 'not_charged' }, c.units_not_charged);
        this.inc({ limit: 'sign_in', decision: 'local_count' }, c.sign_in_throttle_local);
        this.inc({ limit: 'manual_delivery', decision: 'local_count' }, c.manual_limit_local);
        // The MCP server's per-seat session cap, kept in its process (apps/mcp/src/sessions/degrading-seat-cap.ts).
        this.inc({ limit: 'mcp_sessions_per_seat', decision: 'local_count' }, c.mcp_sessions_local);
      },
    }),

    collectErrorsTotal,

    /** Report this queue's depths at scrape time (idempotent per queue name). */
    trackQueue(queue: Queue): void {
      queues.set(queue.name, queue);
    },
    /** Report a dispatcher's rows at scrape time (the worker's delivery engine registers its one). */
    watchDispatcher(stats: () => { waiting: number; inFlight: number; accounts: number }): void {
      dispatcherStats = stats;
    },
    /** Report the outbox backlog at scrape time, read through this pool. */
    watchOutbox(pool: Pool): void {
      outboxPool = pool;
    },
    /** Process metrics (CPU, memory, event loop lag, GC): once per registry, by the processes that serve /metrics. */
    enableProcessMetrics(): void {
      if (defaultsOn) return;
      defaultsOn = true;
      collectDefaultMetrics({ register: registry });
    },
  };
  return metrics;
}

export type Metrics = ReturnType<typeof createMetrics>;
