/**
 * Spec: Limits — call units per day per seat; Delivery behaviour rule 4 (the worker charges one
 * unit per delivery attempt through this same module). Real Redis, no app in between.
 */
import { chargeUnits, nextUtcMidnight, randomToken, readCost, unitUsage, unitsKey, type SeatRef } from '@teamchat/core';
import { startHarness, type Harness } from '../../../../test/support/harness';

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

function seat(now: Date, unitsPerDay = 30): SeatRef {
  return {
    redis: h.deps.redis, keys: h.deps.config, accountId: `acct_${randomToken(6)}`,
    seatUserId: `user_${randomToken(6)}`, limits: { unitsPerDay }, now,
  };
}

test('check-and-charge is atomic: exactly the limit of 80 concurrent one-unit charges is allowed', async () => {
  const ref = seat(new Date('2030-01-10T05:00:00Z'));
  const results = await Promise.all(Array.from({ length: 80 }, () => chargeUnits({ ...ref, units: 1 })));
  expect(results.filter((r) => r.allowed)).toHaveLength(30);
  expect(results.filter((r) => r.allowed).map((r) => r.used).sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
  for (const r of results.filter((x) => !x.allowed)) expect(r).toMatchObject({ used: 30, remaining: 0, limit: 30 });
  expect(await unitUsage(ref)).toEqual({ used: 30, limit: 30, remaining: 0, resetsAt: new Date('2030-01-11T00:00:00Z') });
});

test('a charge that would pass the limit is refused whole; an unchecked charge always lands', async () => {
  const ref = seat(new Date('2030-01-10T05:00:00Z'), 10);
  expect(await chargeUnits({ ...ref, units: 8 })).toMatchObject({ allowed: true, used: 8, remaining: 2 });
  expect(await chargeUnits({ ...ref, units: 3 })).toMatchObject({ allowed: false, used: 8 });
  expect(await chargeUnits({ ...ref, units: 5, mode: 'regardless' })).toMatchObject({ allowed: true, charged: 5, used: 13, remaining: 0 });
  await expect(chargeUnits({ ...ref, units: -1 })).rejects.toThrow(RangeError);
});

test('a partial charge takes as many units as are left, none past the limit, atomically under concurrency', async () => {
  const ref = seat(new Date('2030-01-10T05:00:00Z'), 10);
  expect(await chargeUnits({ ...ref, units: 7, mode: 'partial' })).toMatchObject({ allowed: true, charged: 7, used: 7, remaining: 3 });
  expect(await chargeUnits({ ...ref, units: 4, mode: 'partial' })).toMatchObject({ allowed: false, charged: 3, used: 10, remaining: 0 });
  expect(await chargeUnits({ ...ref, units: 2, mode: 'partial' })).toMatchObject({ allowed: false, charged: 0, used: 10 });
  const other = seat(new Date('2030-01-10T05:00:00Z'), 25);
  const results = await Promise.all(Array.from({ length: 12 }, () => chargeUnits({ ...other, units: 3, mode: 'partial' })));
  expect(results.reduce((sum, r) => sum + r.charged, 0)).toBe(25);
  expect(await unitUsage(other)).toMatchObject({ used: 25, remaining: 0 });
});

test('each UTC day has its own counter, which expires after the day', async () => {
  const ref = seat(new Date('2030-02-28T23:30:00Z'), 2);
  await chargeUnits({ ...ref, units: 2 });
  expect((await chargeUnits({ ...ref, units: 1 })).allowed).toBe(false);
  const ttl = await h.deps.redis.pttl(unitsKey(ref.keys, ref.accountId, ref.seatUserId, ref.now));
  // 30 minutes to midnight plus the one-hour grace
  expect(ttl).toBeGreaterThan(89 * 60_000);
  expect(ttl).toBeLessThanOrEqual(90 * 60_000);

  const next = { ...ref, now: new Date('2030-03-01T00:00:00Z') };
  expect(await chargeUnits({ ...next, units: 1 })).toMatchObject({ allowed: true, used: 1, resetsAt: new Date('2030-03-02T00:00:00Z') });
});

test('next reset and read cost helpers', () => {
  expect(nextUtcMidnight(new Date('2030-12-31T23:59:59.999Z')).toISOString()).toBe('2031-01-01T00:00:00.000Z');
  expect(nextUtcMidnight(new Date('2030-06-15T00:00:00Z')).toISOString()).toBe('2030-06-16T00:00:00.000Z');
  expect([0, 1, 16 * 1024, 16 * 1024 + 1, 48 * 1024].map(readCost)).toEqual([1, 1, 1, 2, 3]);
});
