/**
 * `npm run bench -- messages`: the API hot path (docs/performance.md) next to bare Express baselines
 * measured the same way in the same run:
 *
 * 1. `POST /echo` on a bare Express app (JSON body echoed);
 * 2. `POST .../channels/{id}/messages` on one channel, then round-robin over 8 channels;
 * 3. `GET /page` on the bare app returning a real page of 50 messages as fixed JSON;
 * 4. `GET .../channels/{id}/messages` (a page of 50).
 *
 * The API runs as deployed by default (request logging at `info`, JSON lines to stdout) with
 * limits off; see bench/limits.bench.ts for their cost. Each row also gives the server's CPU µs
 * and PostgreSQL round trips per request: on a shared machine these move far less than req/s.
 */
import { startServer } from './support/child';
import { CONNECTIONS, DURATION_S, WARMUP_S, measure, row, type Measured } from './support/load';
import type { BenchContext, BenchResult, Figure } from './run';

/** This bench's lines of the figures table (docs/performance.md): req/s and p99 of a route next to its bare Express row. */
/** The hot path's targets (docs/performance.md): throughput as a % of the same-run baseline, p99 in ms (none where no target is set). */
function figuresOf(id: string, name: string, m: Measured, base: Measured, baseName: string, targets: { minPct?: number; maxP99?: number } = {}): Figure[] {
  const pct = Number(((100 * m.rps) / base.rps).toFixed(1));
  return [
    {
      id: `${id}_rps`, figure: `${name}: throughput`, value: Math.round(m.rps), unit: 'req/s', baseline: baseName, baselineValue: Math.round(base.rps), ratioPct: pct,
      ...(targets.minPct !== undefined ? { target: `≥ ${targets.minPct} % of baseline`, met: pct >= targets.minPct } : {}),
    },
    {
      id: `${id}_p99_ms`, figure: `${name}: p99 latency`, value: m.p99, unit: 'ms', baseline: baseName, baselineValue: base.p99,
      ...(targets.maxP99 !== undefined ? { target: `≤ ${targets.maxP99} ms`, met: m.p99 <= targets.maxP99 } : {}),
    },
  ];
}

export default async function messagesBench(ctx: BenchContext): Promise<BenchResult> {
  const server = await startServer(ctx);
  try {
    const seed = await server.seed();
    const api = `http://127.0.0.1:${server.ready.ports.off}`;
    const bare = `http://127.0.0.1:${server.ready.ports.bare}`;
    const headers = { authorization: `Bearer ${seed.key}`, 'content-type': 'application/json' };
    const body = JSON.stringify({ text: `benchmark message <@${seed.identityId}> with a mention`, client_ref: 'bench' });
    const postPath = (ch: string) => `/accounts/${seed.accountId}/channels/${ch}/messages`;
    const readPath = `/accounts/${seed.accountId}/channels/${seed.readChannel}/messages`;
    const only = process.env.BENCH_ONLY;
    const want = (id: string) => !only || only.split(',').includes(id);

    const page = await (await fetch(`${api}${readPath}`, { headers })).json();
    await server.setPage(page);

    const rows = [];
    const figures: Figure[] = [];
    // BENCH_ONLY=post1,post8,read,echo picks rows (for a profile of one route, leave out echo)
    const echo = want('echo') ? await measure(server, { url: `${bare}/echo`, method: 'POST', headers: { 'content-type': 'application/json' }, body }) : undefined;
    if (echo) rows.push(row('bare Express JSON echo (POST)', echo));
    if (want('post1')) {
      const m = await measure(server, { url: api, requests: [{ method: 'POST', path: postPath(seed.channels[0]), headers, body }] });
      rows.push(row('POST messages, 1 channel', m, echo));
      if (echo) figures.push(...figuresOf('api_write1', 'API write: POST messages on 1 channel', m, echo, 'bare Express JSON echo (POST)', { minPct: 12, maxP99: 60 }));
    }
    if (want('post8')) {
      const m = await measure(server, { url: api, requests: seed.channels.map((ch) => ({ method: 'POST' as const, path: postPath(ch), headers, body })) });
      rows.push(row(`POST messages, ${seed.channels.length} channels`, m, echo));
      if (echo) figures.push(...figuresOf('api_write', `API write: POST messages over ${seed.channels.length} channels`, m, echo, 'bare Express JSON echo (POST)', { minPct: 20, maxP99: 40 }));
    }
    if (want('read')) {
      const bareGet = want('echo') ? await measure(server, { url: `${bare}/page` }) : undefined;
      if (bareGet) rows.push(row('bare Express GET, same page JSON', bareGet));
      const m = await measure(server, { url: `${api}${readPath}`, headers });
      rows.push(row('GET messages (page of 50)', m, bareGet));
      if (bareGet) figures.push(...figuresOf('api_read', 'API read: GET messages (page of 50)', m, bareGet, 'bare Express GET, same page JSON', { minPct: 25 }));
    }
    return {
      title: `API hot path vs bare Express (${CONNECTIONS} connections, ${DURATION_S}s each after ${WARMUP_S}s warm-up; limits off; logging info)`,
      rows,
      figures,
      notes: [
        '% of baseline: req/s of the route ÷ req/s of the bare Express row above it (echo for posts, same-JSON GET for the read), same run.',
        'CPU µs/req: the server process\'s process.cpuUsage() over the run ÷ requests; PG rt/req: pg Client.query calls ÷ requests.',
        'Server in its own process (stdout = request log → /dev/null); autocannon in the bench process; PostgreSQL and Redis on the same host.',
      ],
    };
  } finally {
    await server.close();
  }
}
