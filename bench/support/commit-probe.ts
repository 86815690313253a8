import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { now, sleep } from './pace';

/** One probe commit: when it was sent (epoch ms, the bench's clock) and how long it took. */
export interface ProbeCommit { at: number; ms: number }

/** How often the probe commits: often enough to see a stall of the disk's, rare enough to add no load. */
const EVERY_MS = 20;

/** A commit this slow is named in a summary: a stall of the disk's, not the flush's ordinary ~1 ms. */
const SLOW_MS = 50;

/** What the probe does, for the notes that print its figures. */
export const COMMIT_PROBE = `a one-row commit every ${EVERY_MS} ms on a connection of its own`;

/** A running probe: the commits made so far (the array grows while it runs), and its stop. */
export interface CommitProbe {
  commits: readonly ProbeCommit[];
  stop(): Promise<ProbeCommit[]>;
}

/**
 * The host's disk as the service's commits meet it (docs/performance.md "PostgreSQL's WAL, the
 * disk and the cores"): on a connection of its own, a one-row INSERT every EVERY_MS, each its own
 * transaction, so each waits for its WAL flush (`synchronous_commit = on`, as deployed). A commit
 * that takes 100 ms here means every post committing at that moment waited as long, whatever the
 * service's code. bench/run.ts runs one through every bench file and prints its summary after
 * the bench's own notes; a bench reads the same probe's commits (BenchContext.diskCommits) to
 * summarise a phase of its own, so a reader can tell a stall of the host's disk from one of the
 * service.
 */
export async function startCommitProbe(databaseUrl: string): Promise<CommitProbe> {
  // A table of the probe's own in the run's database (probes may overlap): one row per commit, nothing else reads it.
  const table = `bench_commit_probe_${randomBytes(4).toString('hex')}`;
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query(`CREATE TABLE ${table} (id bigserial PRIMARY KEY)`);
  const commits: ProbeCommit[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const at = now();
      await client.query(`INSERT INTO ${table} DEFAULT VALUES`);
      commits.push({ at, ms: now() - at });
      await sleep(EVERY_MS);
    }
  })();
  return {
    commits,
    stop: async () => {
      running = false;
      await loop;
      await client.query(`DROP TABLE IF EXISTS ${table}`);
      await client.end();
      return commits;
    },
  };
}

/** How many of the slowest commits a summary names, with when they came. */
const NAMED = 5;

/**
 * The probe's commits sent in [from, to): p50, the slowest, and how many took SLOW_MS or more, the
 * slowest NAMED of them with when (s after `from`) they came.
 */
export function commitProbeSummary(commits: readonly ProbeCommit[], from: number, to: number): string {
  const inWindow = commits.filter((c) => c.at >= from && c.at < to);
  if (inWindow.length === 0) return 'no probe commits';
  const sorted = inWindow.map((c) => c.ms).sort((a, b) => a - b);
  const slow = inWindow.filter((c) => c.ms >= SLOW_MS).sort((a, b) => b.ms - a.ms);
  const named = slow.slice(0, NAMED).map((c) => `${c.ms.toFixed(0)} ms at ${((c.at - from) / 1000).toFixed(1)} s`);
  return `${inWindow.length} commits, p50 ${sorted[Math.floor(sorted.length / 2)].toFixed(1)} ms, slowest ${sorted[sorted.length - 1].toFixed(1)} ms; ${slow.length} of ${SLOW_MS} ms or more${named.length ? ` (${named.join(', ')}${slow.length > NAMED ? ', …' : ''})` : ''}`;
}
