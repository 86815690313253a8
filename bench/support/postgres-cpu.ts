import fs from 'node:fs';

/**
 * Linux reports a process's CPU in `/proc` in ticks of 1/100 s (`getconf CLK_TCK`): each process's
 * reading is rounded to 10 ms, so a window must hold many deliveries for a figure per delivery.
 */
const US_PER_TICK = 10_000;

/** Each PostgreSQL process's CPU so far (user + system, µs), by pid. */
export type PostgresCpu = ReadonlyMap<number, number>;

/**
 * A reading of every PostgreSQL process on this host (each connection's backend and the server's
 * background processes, as `/proc/<pid>/stat` counts them), or null where `/proc` cannot be read.
 * The bench's PostgreSQL runs on the bench's host, so the CPU between two readings
 * (postgresCpuBetween) is the database's share of the cores in between.
 */
export function readPostgresCpu(): PostgresCpu | null {
  let pids: string[];
  try {
    pids = fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return null;
  }
  const out = new Map<number, number>();
  for (const pid of pids) {
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    // "pid (comm) state ppid …": comm may hold spaces, so the fields are read after its ')'.
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    if (!comm.startsWith('postgres')) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime: fields 14 and 15 of the line, 12 and 13 after comm
    out.set(Number(pid), (Number(fields[11]) + Number(fields[12])) * US_PER_TICK);
  }
  return out;
}

/**
 * The CPU (µs) PostgreSQL's processes used between two readings, per process: a connection
 * opened in between counts from zero, one that ended in between is not counted (its CPU since
 * the first reading is lost with it, so the figure can only be low: an idle pool connection
 * closed meanwhile used next to none).
 */
export function postgresCpuBetween(before: PostgresCpu, after: PostgresCpu): number {
  let us = 0;
  for (const [pid, cpu] of after) us += cpu - (before.get(pid) ?? 0);
  return us;
}
