/**
 * `npx tsx bench/profile-top.ts <file.cpuprofile> [N] [from s] [to s]`: the top items of a V8 CPU
 * profile (from `node --cpu-prof`, e.g. `BENCH_CPU_PROF=/tmp/prof npm run bench -- messages`), by
 * self time: per area (a package under node_modules, our own workspace folder, node internals, GC)
 * and per function. Idle time is left out of the percentages. `from`/`to` keep only the samples
 * taken that many seconds after the profile's start: a profile covers the process's whole life,
 * and its start (modules loaded and compiled, the warm-up) is no part of a bench row's window.
 * The busy time of each whole second is printed too, to find that window.
 *
 * Weighted by sample COUNT, not by the profile's time deltas: a delta is the wall time since the
 * previous sample, so a thread descheduled inside a syscall (a socket write that wakes
 * PostgreSQL or Redis on a busy 2-core machine) would be charged for the time other processes
 * ran. Counting samples charges each sample one sampling interval of this thread's own running.
 */
import fs from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function area(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (url.startsWith('node:')) return 'node internals';
  const m = /\/(apps\/[^/]+|packages\/[^/]+|bench)\/(?:src\/)?([^/]+)/.exec(url);
  if (m) return `${m[1]}/${m[2]}`;
  return url;
}

function main(): void {
  const [file, nArg, fromArg, toArg] = process.argv.slice(2);
  if (!file) throw new Error('usage: profile-top <file.cpuprofile> [N] [from s] [to s]');
  const top = Number(nArg ?? 25);
  const fromS = Number(fromArg ?? 0);
  const toS = toArg === undefined ? Infinity : Number(toArg);
  if (Number.isNaN(fromS) || Number.isNaN(toS) || fromS > toS) throw new Error('from and to are seconds after the profile\'s start, from ≤ to');
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  // One sample ≈ one sampling interval of running (the median delta; node's default is 1 ms).
  const deltas = [...profile.timeDeltas].sort((a, b) => a - b);
  const interval = deltas[Math.floor(deltas.length / 2)] ?? 1000;
  /** busy samples per whole second since the profile's start */
  const perSecond: number[] = [];
  let at = 0;
  // Idle samples are left out here, of the per-second line and of the percentages alike.
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (byId.get(id)!.callFrame.functionName === '(idle)') return;
    const second = Math.floor(at / 1e6);
    perSecond[second] = (perSecond[second] ?? 0) + 1;
    if (at >= fromS * 1e6 && at <= toS * 1e6) self.set(id, (self.get(id) ?? 0) + interval);
  });

  const areas = new Map<string, number>();
  const fns = new Map<string, number>();
  let busy = 0;
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    busy += us;
    const a = area(url, functionName);
    areas.set(a, (areas.get(a) ?? 0) + us);
    const short = url.replace(/^.*\/(node_modules|apps|packages)\//, '$1/');
    const key = `${functionName || '(anonymous)'}  ${short}${url ? `:${lineNumber + 1}` : ''}`;
    fns.set(key, (fns.get(key) ?? 0) + us);
  }
  const print = (title: string, m: Map<string, number>) => {
    console.log(`\n${title}`);
    for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      console.log(`${((100 * us) / busy).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`);
    }
  };
  console.log(`busy ms per second since the start: ${Array.from(perSecond, (n) => Math.round(((n ?? 0) * interval) / 1000)).join(' ')}`);
  const window = fromArg === undefined ? '' : ` between ${fromS} s and ${toS === Infinity ? 'the end' : `${toS} s`}`;
  console.log(`${file}: ${(busy / 1000).toFixed(0)} ms busy${window} (idle excluded)`);
  print('self time by area', areas);
  print('self time by function', fns);
}

main();
