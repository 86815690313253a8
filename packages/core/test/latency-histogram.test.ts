import { bucketLatency, histogramQuantile } from '../src/webhooks/console/stats';

/**
 * The stats' p50/p99 from the rollups' latency histogram (docs/webhooks.md "Health and stats
 * rollups"): buckets 10 % wide, each percentile answered as its bucket's middle, within 5 % (or
 * 1 ms) of the exact value. `bucketOf` is webhook_latency_bucket of migration 0006.
 */
const bucketOf = (ms: number) => (ms < 1 ? 0 : 1 + Math.floor(Math.log(ms) / Math.log(1.1)));

function histogramOf(latencies: number[]) {
  const counts = new Map<number, number>();
  for (const ms of latencies) counts.set(bucketOf(ms), (counts.get(bucketOf(ms)) ?? 0) + 1);
  return [...counts].map(([bucket, count]) => ({ bucket, count }));
}

function exact(latencies: number[], p: number): number {
  const sorted = [...latencies].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)];
}

test('each bucket stands for a latency within 5 % (or 1 ms, as answers are whole ms) of every latency it holds', () => {
  for (let ms = 1; ms <= 30_000; ms += ms < 100 ? 1 : 37) {
    const v = bucketLatency(bucketOf(ms));
    expect(Math.abs(v - ms)).toBeLessThanOrEqual(Math.max(1, 0.05 * ms + 0.5));
  }
  expect(bucketLatency(bucketOf(0))).toBe(0);
});

test('p50 and p99 of a histogram are within 5 % of the exact percentiles', () => {
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const latencies = Array.from({ length: 10_000 }, () => Math.round(20 + 300 * rand() ** 3 + (rand() < 0.02 ? 5000 * rand() : 0)));
  const h = histogramOf(latencies);
  for (const p of [0.5, 0.99]) {
    const approx = histogramQuantile(h, p)!;
    expect(Math.abs(approx - exact(latencies, p)) / exact(latencies, p)).toBeLessThanOrEqual(0.055);
  }
});

test('an empty histogram has no percentile; one latency is its own', () => {
  expect(histogramQuantile([], 0.5)).toBeNull();
  expect(histogramQuantile([{ bucket: 5, count: 0 }], 0.99)).toBeNull();
  expect(histogramQuantile(histogramOf([120]), 0.99)).toBe(bucketLatency(bucketOf(120)));
});
