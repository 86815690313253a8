/**
 * `npm run bench -- limits`: the cost of the fair-use checks (issue 4, issue 10). The same reads,
 * GET /accounts/{id} and GET .../channels/{id}/messages, on two API apps of one server process:
 * limits on and limits off (config.limitsEnabled), alternating rounds in one run. The plan limits
 * are raised so "on" pays for the checks (the per-minute limiter and the daily-unit charge) but
 * never refuses.
 */
import { startServer } from './support/child';
import { CONNECTIONS, DURATION_S, WARMUP_S, measure, row, type Measured } from './support/load';
import type { BenchContext, BenchResult } from './run';

/** alternate off/on this many times, so drift (JIT, caches, a busy neighbour) hits both sides */
const ROUNDS = 2;

function mean(ms: Measured[]): Measured {
  const avg = (f: (m: Measured) => number) => ms.reduce((a, m) => a + f(m), 0) / ms.length;
  return {
    rps: avg((m) => m.rps), p50: avg((m) => m.p50), p99: avg((m) => m.p99), ok: avg((m) => m.ok), bad: avg((m) => m.bad),
    cpuUsPerReq: avg((m) => m.cpuUsPerReq), systemPct: avg((m) => m.systemPct), pgPerReq: avg((m) => m.pgPerReq), redisPerReq: avg((m) => m.redisPerReq),
  };
}

export default async function limitsBench(ctx: BenchContext): Promise<BenchResult> {
  const server = await startServer(ctx);
  try {
    const seed = await server.seed();
    const headers = { authorization: `Bearer ${seed.key}` };
    const routes = [
      { id: 'account', name: 'GET /accounts/{id}', path: `/accounts/${seed.accountId}` },
      { id: 'messages', name: 'GET messages (page of 50)', path: `/accounts/${seed.accountId}/channels/${seed.readChannel}/messages` },
    ];
    const rows = [];
    // BENCH_ONLY=account,messages picks routes; BENCH_MODES=on (or off) measures one side only (for a profile)
    const only = process.env.BENCH_ONLY?.split(',');
    const modes = (process.env.BENCH_MODES?.split(',') ?? ['off', 'on']) as Array<'off' | 'on'>;
    for (const r of routes.filter((x) => !only || only.includes(x.id))) {
      const runs: Record<'on' | 'off', Measured[]> = { on: [], off: [] };
      for (let i = 0; i < ROUNDS; i += 1) {
        for (const mode of modes) {
          const m = await measure(server, { url: `http://127.0.0.1:${server.ready.ports[mode]}${r.path}`, headers });
          if (m.bad > 0) throw new Error(`${r.name} (limits ${mode}): ${m.bad} non-2xx/errors; the bench must not be throttled`);
          runs[mode].push(m);
        }
      }
      const off = runs.off.length ? mean(runs.off) : undefined;
      const on = runs.on.length ? mean(runs.on) : undefined;
      if (off) rows.push(row(`${r.name}, limits off`, off));
      if (on) rows.push({ ...row(`${r.name}, limits on`, on, off), 'extra CPU µs/req': off ? Math.round(on.cpuUsPerReq - off.cpuUsPerReq) : '' });
    }
    return {
      title: `Fair-use limits on vs off (${CONNECTIONS} connections, ${ROUNDS} alternating rounds of ${DURATION_S}s per mode after ${WARMUP_S}s warm-up each)`,
      rows,
      notes: [
        '"on" = the per-minute limiter (express-rate-limit) and the daily-unit charge, limits raised so nothing is refused; % of baseline = on ÷ off.',
        'Logging info to /dev/null, as deployed; server in its own process, autocannon in the bench process.',
      ],
    };
  } finally {
    await server.close();
  }
}
