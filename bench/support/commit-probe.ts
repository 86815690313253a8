import { Client } from 'pg';
import { now, sleep } from './pace';

/** One probe commit: when it was sent (epoch ms, the bench's clock) and how long it took. */
export interface ProbeCommit { at: number; ms: number }

/** The probe's own table in the run's database: one row per commit, nothing else reads it. */
const TABLE = 'bench_commit_probe';

/** How often the probe commits: often enough to see a stall of the disk's, rare enough to add no load. */
const EVERY_MS = 20;

/**
 * The host's disk as the service's commits meet it (docs/performance.md "PostgreSQL's WAL, the
 * disk and the cores"): on a connection of its own, a one-row INSERT every EVERY_MS, each its own
 * transaction, so each waits for its WAL flush (`synchronous_commit = on`, as deployed). A commit
 * that takes 100 ms here means every post committing at that moment waited as long, whatever the
 * service's code; the users bench prints the probe's slowest commits next to its latency rows so
 * a reader can tell a stall of the host's disk from one of the service.
 */
export async function startCommitProbe(databaseUrl: string): Promise<{ stop: () => Promise<ProbeCommit[]> }> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query(`CREATE TABLE IF NOT EXISTS ${TABLE} (id bigserial PRIMARY KEY)`);
  const commits: ProbeCommit[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const at = now();
      await client.query(`INSERT INTO ${TABLE} DEFAULT VALUES`);
      commits.push({ at, ms: now() - at });
      await sleep(EVERY_MS);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      await client.query(`DROP TABLE IF EXISTS ${TABLE}`);
      await client.end();
      return commits;
    },
  };
}

/** The probe's commits sent in [from, to): p50, the slowest, and when (s after `from`) each commit of ≥ 50 ms came. */
export function commitProbeSummary(commits: ProbeCommit[], from: number, to: number): string {
  const inWindow = commits.filter((c) => c.at >= from && c.at < to);
  if (inWindow.length === 0) return 'no probe commits';
  const sorted = inWindow.map((c) => c.ms).sort((a, b) => a - b);
  const slow = inWindow.filter((c) => c.ms >= 50).map((c) => `${((c.at - from) / 1000).toFixed(1)} s: ${c.ms.toFixed(0)} ms`);
  return `${inWindow.length} commits, p50 ${sorted[Math.floor(sorted.length / 2)].toFixed(1)} ms, slowest ${sorted[sorted.length - 1].toFixed(1)} ms${slow.length ? `; ≥ 50 ms at ${slow.join(', ')}` : ''}`;
}
