/**
 * `npm run bench -- limits`: the cost of the fair-use checks (docs/api.md "Fair-use limits"). The same reads,
 * GET /accounts/{id} and GET .../channels/{id}/messages, on two API apps of one server process:
 * limits on and limits off (config.limitsEnabled). The plan limits are raised so "on" pays for
 * the checks (the per-minute limiter and the daily-unit charge) but never refuses.
 *
 * On a shared machine one measurement's CPU µs/request moves by ±20 % with the neighbours' load,
 * so the modes alternate in ROUNDS short adjacent pairs (off then on, or on then off, swapping
 * each round) and the cost is the MEDIAN of the per-pair ratios: a burst of load hits one pair,
 * not the result.
 */
import { startServer } from './support/child';
import { CONNECTIONS, measure, row, type Measured } from './support/load';
import type { BenchContext, BenchResult, Figure } from './run';

/** pairs per route (BENCH_ROUNDS), seconds per measurement (BENCH_DURATION, default 5 here) */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const DURATION_S = Number(process.env.BENCH_DURATION ?? 5);

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function medianOf(ms: Measured[]): Measured {
  const m = (f: (x: Measured) => number) => median(ms.map(f));
  return {
    rps: m((x) => x.rps), p50: m((x) => x.p50), p99: m((x) => x.p99), ok: m((x) => x.ok), bad: m((x) => x.bad),
    cpuUsPerReq: m((x) => x.cpuUsPerReq), systemPct: m((x) => x.systemPct), pgPerReq: m((x) => x.pgPerReq), redisPerReq: m((x) => x.redisPerReq),
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
    // BENCH_ONLY=account,messages picks routes; BENCH_MODES=on (or off) measures one side only (for a profile)
    const only = process.env.BENCH_ONLY?.split(',');
    const modes = (process.env.BENCH_MODES?.split(',') ?? ['off', 'on']) as Array<'off' | 'on'>;
    const rows = [];
    const figures: Figure[] = [];
    for (const r of routes.filter((x) => !only || only.includes(x.id))) {
      const runs: Record<'on' | 'off', Measured[]> = { on: [], off: [] };
      const ratios = { rps: [] as number[], cpu: [] as number[] };
      for (let i = 0; i < ROUNDS; i += 1) {
        const order = i % 2 === 0 ? modes : [...modes].reverse();
        for (const mode of order) {
          const m = await measure(server, { url: `http://127.0.0.1:${server.ready.ports[mode]}${r.path}`, headers, duration: DURATION_S });
          if (m.bad > 0) throw new Error(`${r.name} (limits ${mode}): ${m.bad} non-2xx/errors; the bench must not be throttled`);
          runs[mode].push(m);
        }
        if (runs.on[i] && runs.off[i]) {
          ratios.rps.push(runs.on[i].rps / runs.off[i].rps);
          ratios.cpu.push(runs.on[i].cpuUsPerReq / runs.off[i].cpuUsPerReq);
        }
      }
      const off = runs.off.length ? medianOf(runs.off) : undefined;
      const on = runs.on.length ? medianOf(runs.on) : undefined;
      if (off) rows.push(row(`${r.name}, limits off`, off));
      if (on) {
        rows.push({
          ...row(`${r.name}, limits on`, on),
          'on÷off req/s (median of pairs)': ratios.rps.length ? Number(median(ratios.rps).toFixed(3)) : '',
          'on÷off CPU/req (median of pairs)': ratios.cpu.length ? Number(median(ratios.cpu).toFixed(3)) : '',
        });
        if (off && r.id === 'messages' && ratios.rps.length) {
          // Target (docs/performance.md): limits on vs off on a read cost ≤ 10 % (1 − on÷off req/s, median of the pairs).
          const cost = Number((100 * (1 - median(ratios.rps))).toFixed(1));
          figures.push({
            id: 'limits_read_cost_pct', figure: `Cost of the limits on a read (${r.name}): 1 − on÷off req/s, median of ${ratios.rps.length} pairs`,
            value: cost, unit: '%', baseline: 'same route, limits off', baselineValue: Math.round(off.rps), baselineUnit: 'req/s', target: '≤ 10 %', met: cost <= 10,
          });
        }
      }
    }
    return {
      title: `Fair-use limits on vs off (${CONNECTIONS} connections, ${ROUNDS} alternating pairs of ${DURATION_S}s per mode, each after a warm-up)`,
      rows,
      figures,
      notes: [
        '"on" = the per-minute limiter (express-rate-limit) and the daily-unit charge, limits raised so nothing is refused.',
        'Rows show medians over the rounds; the cost of the limits is 1 − (on÷off req/s), and on÷off CPU/req − 1, each the median of adjacent pairs.',
        'Logging info to /dev/null, as deployed; server in its own process, autocannon in the bench process.',
      ],
    };
  } finally {
    await server.close();
  }
}
