/**
 * `npm run bench`: runs every bench/*.bench.ts in turn against the real PostgreSQL and Redis
 * (a throwaway database per run) and prints each one's figures. `npm run bench -- messages`
 * runs only the files whose name contains "messages" (`-- users,isolation`: either name); each
 * bench file also picks rows from its own BENCH_* variables (docs/performance.md).
 *
 * A bench file default-exports `async function (ctx: BenchContext): Promise<BenchResult>`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { runMigrations } from '@teamchat/db';
import { describeProbe, probeHost } from './support/host-probe';
import { COMMIT_PROBE, commitProbeSummary, startCommitProbe, type ProbeCommit } from './support/commit-probe';
import { now } from './support/pace';

export interface BenchContext {
  /** a freshly migrated database for this bench run */
  databaseUrl: string;
  redisUrl: string;
  /** the run's disk probe during this bench file: its commits so far (bench/support/commit-probe.ts) */
  diskCommits: readonly ProbeCommit[];
}

export interface BenchResult {
  title: string;
  /** rows of figures, printed as a table */
  rows: Array<Record<string, string | number>>;
  notes?: string[];
  /** this bench's lines of the one figures table (docs/performance.md) */
  figures?: Figure[];
}

/**
 * One line of the figures table (docs/performance.md) and of `figures` in bench/results.json: a measured
 * value next to its baseline measured in the same run.
 */
export interface Figure {
  /** stable key, e.g. `api_post8_rps`, `webhook_e2e_p99_ms` */
  id: string;
  figure: string;
  value: number;
  unit: string;
  baseline: string;
  baselineValue: number;
  /** the baseline's unit when it is not the figure's own (e.g. req/s behind a % cost) */
  baselineUnit?: string;
  /** value ÷ baselineValue × 100 where that ratio is the point (throughput); omitted otherwise */
  ratioPct?: number;
  /** the target (docs/performance.md), if one is set, and whether this run met it */
  target?: string;
  met?: boolean;
}

/**
 * Bench files a full run leaves out (run them by name): search seeds 1,000,000 messages (~8 min),
 * scale seeds 10,000,000 rows (~17 min) and backlog drains an outage's backlog (minutes to tens of
 * minutes); with them the full run would go far past its ~15 minutes.
 */
const ONLY_WHEN_NAMED = ['search', 'scale', 'backlog'];

const SERVER_URL = process.env.TEST_SERVER_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function main(): Promise<void> {
  const filter = process.argv[2];
  const names = filter?.split(',').filter(Boolean);
  const files = fs
    .readdirSync(__dirname)
    .filter((f) => f.endsWith('.bench.ts') && (names ? names.some((n) => f.includes(n)) : !ONLY_WHEN_NAMED.some((o) => f.startsWith(o))))
    .sort();
  const name = `teamchat_bench_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: SERVER_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  const ctx = { databaseUrl: url.toString(), redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' };
  try {
    await runMigrations(ctx.databaseUrl);
    if (process.env.BENCH_EXTRA_SQL) { const c = new Client({ connectionString: ctx.databaseUrl }); await c.connect(); await c.query(process.env.BENCH_EXTRA_SQL); await c.end(); }
    const postgres = await postgresSettings(admin);
    console.log(`machine: ${os.cpus().length} × ${os.cpus()[0]?.model}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}`);
    console.log(`postgres: ${Object.entries(postgres).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    const probe = await probeHost();
    console.log(`host: ${describeProbe(probe)}`);
    const machine = { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? '', memGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version, loadavg: os.loadavg().map((x) => Number(x.toFixed(2))), postgres, probe };
    const startedAt = new Date().toISOString();
    const results: Array<{ file: string } & BenchResult> = [];
    for (const [i, file] of files.entries()) {
      if (i > 0) await settle(ctx.databaseUrl);
      const mod = (await import(path.join(__dirname, file))) as { default: (c: BenchContext) => Promise<BenchResult> };
      // The host's disk while the bench runs: a stall of its flushes holds every commit of the
      // service at that moment, so a tail figure that lines up with one is the host's
      // (bench/support/commit-probe.ts; docs/performance.md "PostgreSQL's WAL, the disk and the cores").
      const disk = await startCommitProbe(ctx.databaseUrl);
      const from = now();
      const ran = await mod.default({ ...ctx, diskCommits: disk.commits }).then((value) => ({ value }), (err: unknown) => ({ err }));
      const commits = await disk.stop(); // its connection closed whether the bench went through or not
      if ('err' in ran) throw ran.err;
      const diskNote = `the host's disk during this bench (${COMMIT_PROBE}): ${commitProbeSummary(commits, from, now())}`;
      const result: BenchResult = { ...ran.value, notes: [...(ran.value.notes ?? []), diskNote] };
      results.push({ file, ...result });
      console.log(`\n## ${result.title}`);
      console.table(result.rows);
      for (const note of result.notes ?? []) console.log(`- ${note}`);
    }
    const figures = results.flatMap((r) => r.figures ?? []);
    console.log('\n## The figures table: each figure next to its same-run baseline');
    console.table(figures.map(tableLine));
    const out = {
      schema: 'teamchat-bench/1',
      startedAt,
      finishedAt: new Date().toISOString(),
      machine: { ...machine, loadavgAtEnd: os.loadavg().map((x) => Number(x.toFixed(2))) },
      filter: filter ?? null,
      env: Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('BENCH_')).sort()),
      figures,
      benches: results.map((r) => ({ file: r.file, title: r.title, rows: r.rows, notes: r.notes ?? [] })),
    };
    // A partial run (a filter) writes beside the full results, never over them.
    const file = path.join(__dirname, filter ? `results.${filter.replace(/[^a-z0-9_-]+/gi, '_')}.json` : 'results.json');
    fs.writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
    console.log(`\nwritten: ${path.relative(process.cwd(), file)}`);
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
}

/**
 * The server settings that move the figures (docs/performance.md "Reading the figures"): the
 * test machines run PostgreSQL without autovacuum and with its default shared_buffers, which a
 * production server would not; printed with the machine and kept in the results.
 */
const POSTGRES_SETTINGS = ['server_version', 'shared_buffers', 'max_wal_size', 'synchronous_commit', 'autovacuum', 'fsync', 'full_page_writes'];
async function postgresSettings(c: Client): Promise<Record<string, string>> {
  const { rows } = await c.query<{ name: string; setting: string }>(
    'SELECT name, current_setting(name) AS setting FROM pg_settings WHERE name = ANY($1) ORDER BY array_position($1, name)',
    [POSTGRES_SETTINGS],
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.setting]));
}

/**
 * Between two bench files of one run: VACUUM (ANALYZE) the run's database, so a bench does not
 * pay for the vacuum debt of the ones before it (the isolation bench alone leaves 300,000 delivery
 * rows written and updated, which autovacuum would take on about a minute later, inside the next
 * bench's measurement), then a CHECKPOINT: the WAL those rows and the vacuum wrote (the isolation
 * bench's seeding alone ~540 MB) is otherwise written out by a checkpoint spread over the next
 * minutes, inside the next benches' measurements (the users bench's first phase after it measured
 * p99 51.4 ms in a full run against 17.6-32.3 ms in four runs of its own the same hour). Each
 * bench starts on a settled database, as it does when run by name. First, events that a bench
 * without a worker left unrelayed (the messages bench's ~20,000 posts; no endpoint of theirs)
 * are marked relayed, as a worker would have done (writing no delivery): otherwise the next
 * bench's worker relays them right before its measurement, whose first seconds then carry the
 * tail of that work (docs/performance.md "As users see it").
 */
async function settle(databaseUrl: string): Promise<void> {
  const t = Date.now();
  const c = new Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const relayed = await c.query(`UPDATE events SET relayed_at = now() WHERE relayed_at IS NULL`);
    if (relayed.rowCount) console.log(`(settle: ${relayed.rowCount} events left unrelayed by a bench without a worker marked relayed)`);
    await c.query('VACUUM (ANALYZE)');
    await c.query('CHECKPOINT');
  } finally {
    await c.end();
  }
  console.log(`\n(settled: VACUUM (ANALYZE) and CHECKPOINT of the run's database, ${((Date.now() - t) / 1000).toFixed(1)} s)`);
}

function tableLine(f: Figure): Record<string, string | number> {
  return {
    figure: f.figure,
    value: `${f.value} ${f.unit}`,
    baseline: f.baseline,
    'baseline value': `${f.baselineValue} ${f.baselineUnit ?? f.unit}`,
    '% of baseline': f.ratioPct ?? '',
    target: f.target ? `${f.target}: ${f.met ? 'met' : 'NOT met'}` : '',
  };
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(err.stack);
    process.exit(1);
  },
);
