import { performance } from 'node:perf_hooks';

/** Load shapes and percentiles shared by the webhook benches (one clock: epoch ms, sub-ms). */
export const now = () => performance.timeOrigin + performance.now();
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const r1 = (x: number) => Math.round(x * 10) / 10;

/** The p-th percentile of ascending `sorted` (nearest rank); NaN when empty. */
export function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export const MAX_OUTSTANDING = 1024;

/** Open loop at `rate`/s for `seconds`: each request is started at its scheduled time (up to `maxOutstanding` at once). */
export async function paced<T>(rate: number, seconds: number, fire: (i: number) => Promise<T>, maxOutstanding = MAX_OUTSTANDING): Promise<{ results: T[]; errors: number; late: number }> {
  const results: T[] = [];
  let errors = 0;
  let late = 0;
  let outstanding = 0;
  const total = Math.round(rate * seconds);
  const start = now();
  const pending: Promise<void>[] = [];
  let i = 0;
  while (i < total) {
    const due = Math.min(total, Math.floor(((now() - start) / 1000) * rate) + 1);
    while (i < due) {
      if (outstanding >= maxOutstanding) { late += 1; i += 1; continue; }
      outstanding += 1;
      const n = i;
      pending.push(fire(n).then((r) => { results.push(r); }, () => { errors += 1; }).finally(() => { outstanding -= 1; }));
      i += 1;
    }
    await sleep(1);
  }
  await Promise.all(pending);
  return { results, errors, late };
}

/** Closed loop with `concurrency` requests in flight for `seconds`. */
export async function closedLoop(concurrency: number, seconds: number, fire: () => Promise<unknown>): Promise<{ done: number; errors: number; wallS: number }> {
  let done = 0;
  let errors = 0;
  const start = now();
  const end = start + seconds * 1000;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (now() < end) {
      try { await fire(); done += 1; } catch { errors += 1; }
    }
  }));
  return { done, errors, wallS: (now() - start) / 1000 };
}

/** p50/p90/p99/max of a list of ms (sorted here), rounded, for a table row. */
export function spread(xs: number[]): { n: number; 'p50 ms': number; 'p90 ms': number; 'p99 ms': number; 'max ms': number } {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, 'p50 ms': r1(pct(s, 50)), 'p90 ms': r1(pct(s, 90)), 'p99 ms': r1(pct(s, 99)), 'max ms': r1(pct(s, 100)) };
}
