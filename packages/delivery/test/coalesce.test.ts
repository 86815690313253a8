/**
 * Coalescer (coalesce.ts): batching that grows with the load and, unless told to gather, never
 * waits on a timer.
 */
import { Coalescer } from '../src/coalesce';

function recording() {
  const runs: number[][] = [];
  let release: (() => void) | undefined;
  const c = new Coalescer<number, number>(async (items) => {
    runs.push(items);
    if (items[0] === 100) await new Promise<void>((r) => { release = r; });
    return items.map((i) => i * 2);
  });
  return { c, runs, release: () => release?.() };
}

test('items added in one turn of the event loop go in one run, and each gets its own result', async () => {
  const { c, runs } = recording();
  const answers = await Promise.all([c.add(1), c.add(2), c.add(3)]);
  expect(answers).toEqual([2, 4, 6]);
  expect(runs).toEqual([[1, 2, 3]]);
});

test('items added in separate turns of an idle system each run on their own, at the end of their turn', async () => {
  const { c, runs } = recording();
  expect(await c.add(1)).toBe(2);
  await new Promise((r) => setImmediate(r));
  expect(await c.add(2)).toBe(4);
  expect(runs).toEqual([[1], [2]]);
});

test('items added while a run is under way wait for it and go together in the next run', async () => {
  const { c, runs, release } = recording();
  const first = c.add(100);
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  expect(runs).toEqual([[100]]);
  const later = [c.add(4), c.add(5)];
  await new Promise((r) => setImmediate(r));
  const more = c.add(6);
  release();
  expect(await first).toBe(200);
  expect(await Promise.all([...later, more])).toEqual([8, 10, 12]);
  expect(runs).toEqual([[100], [4, 5, 6]]);
});

test('a run that fails rejects exactly its own items; the next run goes on', async () => {
  let calls = 0;
  const c = new Coalescer<number, number>(async (items) => {
    calls += 1;
    if (calls === 1) throw new Error('boom');
    return items;
  });
  const failed = Promise.allSettled([c.add(1), c.add(2)]);
  expect((await failed).map((r) => r.status)).toEqual(['rejected', 'rejected']);
  expect(await c.add(3)).toBe(3);
});

const turn = () => new Promise((r) => setImmediate(r));

test('with a gather, items added in separate turns within it go in one run, which starts once the gather has passed', async () => {
  // A gather far longer than two turns of the event loop on a loaded machine (the engine's
  // GATHER_MS is a few ms: a turn of a busy test run can outlast it).
  const gatherMs = 500;
  const runs: Array<{ items: number[]; at: number }> = [];
  const c = new Coalescer<number, number>(async (items) => {
    runs.push({ items, at: performance.now() });
    return items.map((i) => i * 2);
  }, { gatherMs });
  const start = performance.now();
  const first = c.add(1);
  await turn();
  const second = c.add(2);
  await turn();
  expect(runs).toEqual([]);
  expect(await Promise.all([first, second])).toEqual([2, 4]);
  expect(runs.map((r) => r.items)).toEqual([[1, 2]]);
  // Timers may fire up to a millisecond early by performance.now()'s reckoning.
  expect(runs[0].at - start).toBeGreaterThanOrEqual(gatherMs - 1);
});

test('with a gather, items added while a run is under way go in the next run as soon as it ends, with no second gather', async () => {
  let release: (() => void) | undefined;
  const runs: number[][] = [];
  const c = new Coalescer<number, number>(async (items) => {
    runs.push(items);
    if (items[0] === 100) await new Promise<void>((r) => { release = r; });
    return items;
  }, { gatherMs: 1_000 });
  const first = c.add(100);
  // drain() starts the gathering run at once; it is under way until released.
  const drained = c.drain();
  await turn();
  expect(runs).toEqual([[100]]);
  const later = c.add(7);
  const at = performance.now();
  release!();
  expect(await first).toBe(100);
  expect(await later).toBe(7);
  expect(performance.now() - at).toBeLessThan(500);
  await drained;
  expect(runs).toEqual([[100], [7]]);
}, 10_000);

test('drain() starts a gathering run at once and resolves when every run under way has ended; with nothing under way it resolves at once', async () => {
  const runs: number[][] = [];
  const c = new Coalescer<number, number>(async (items) => {
    runs.push(items);
    await new Promise((r) => setTimeout(r, 20));
    return items;
  }, { gatherMs: 60_000 });
  await c.drain();
  const a = c.add(1);
  const b = c.add(2);
  let answered = false;
  void Promise.all([a, b]).then(() => { answered = true; });
  await c.drain();
  expect(runs).toEqual([[1, 2]]);
  expect(answered).toBe(true);
});
