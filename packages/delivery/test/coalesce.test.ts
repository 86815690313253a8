/**
 * Coalescer (coalesce.ts): batching that grows with the load and never waits on a timer.
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
