import autocannon from 'autocannon';
import type { BenchServer } from './child';

/** Concurrent connections; seconds per measurement (after a warm-up of WARMUP_S). */
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
export const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
export const WARMUP_S = Number(process.env.BENCH_WARMUP ?? 2);

export interface Measured {
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  bad: number;
  /** server CPU µs per request */
  cpuUsPerReq: number;
  /** share of that CPU time spent in the kernel (socket and file writes), % */
  systemPct: number;
  pgPerReq: number;
  redisPerReq: number;
}

/**
 * One measurement: a warm-up, then DURATION_S of load while the server counts its CPU time and
 * round trips. autocannon runs in this (the bench) process; the server is another process.
 */
export async function measure(server: BenchServer, opts: autocannon.Options): Promise<Measured> {
  await autocannon({ connections: CONNECTIONS, ...opts, duration: WARMUP_S });
  await server.start();
  const r = await autocannon({ connections: CONNECTIONS, duration: DURATION_S, ...opts });
  const s = await server.stop();
  const ok = r['2xx'];
  const bad = r.non2xx + r.errors + r.timeouts;
  const total = Math.max(1, ok + r.non2xx);
  if (s.queries) {
    console.log(`queries per request, ${JSON.stringify(opts.url)}:`);
    for (const [text, n] of Object.entries(s.queries)) console.log(`  ${(n / total).toFixed(2)}  ${text}`);
  }
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    ok,
    bad,
    cpuUsPerReq: s.cpuUs / total,
    systemPct: (100 * s.systemUs) / Math.max(1, s.cpuUs),
    pgPerReq: s.pgQueries / total,
    redisPerReq: s.redisCommands / total,
  };
}

export function row(route: string, m: Measured, baseline?: Measured): Record<string, string | number> {
  return {
    route,
    'req/s': Math.round(m.rps),
    'p50 ms': m.p50,
    'p99 ms': m.p99,
    '2xx': m.ok,
    'non-2xx/err': m.bad,
    '% of baseline': baseline ? Number(((100 * m.rps) / baseline.rps).toFixed(1)) : '',
    'CPU µs/req': Math.round(m.cpuUsPerReq),
    'kernel %': Math.round(m.systemPct),
    'PG rt/req': Number(m.pgPerReq.toFixed(2)),
    'Redis cmd/req': Number(m.redisPerReq.toFixed(2)),
  };
}
