import Redis from 'ioredis';
import {
  accountUsage, assertManualDeliveryAllowed, chargeCall, chargeUnitsMany, createLogger, createRedisFor, inFlightKey, keySlot,
  manualDeliveryKey, mcpKeyBase, queuePrefix, randomToken, relayLeaseKey, reserveSignIn, signInAddressKey, signInEmailKey,
  unitsKey, minuteKey, waitReady, type RedisClient, type RedisKeyConfig,
} from '@teamchat/core';
import { acquireInFlightSlots, releaseSlots } from '@teamchat/delivery';
import { SeatCap, type SessionRecord } from '@teamchat/mcp/src/sessions/seat-cap';
import { removeTestRedisCluster, startTestRedisCluster, type TestRedisCluster } from '../support/redis-cluster';
import { startHarness, newAccount, addPerson, type Harness } from '../support/harness';

/**
 * Redis Cluster (docs/operations.md "Redis Cluster"): every multi-key operation of the service
 * runs on a real three-master cluster, with keys named by redis-keys.ts, and a single Redis keeps
 * the names it always had. A cluster refuses (CROSSSLOT) a script over keys of two slots, so each
 * operation below would fail if its keys were not tagged into one slot (the first test shows the
 * refusal on the untagged names).
 */
let cluster: TestRedisCluster;
let h: Harness;
let redis: RedisClient;
let keys: RedisKeyConfig;

beforeAll(async () => {
  cluster = await startTestRedisCluster();
  process.env.TEST_REDIS_CLUSTER_NODES = cluster.nodes;
  // Setup hashes passwords inside transactions: a loaded machine outlasts the default 5 s bound (not what this file tests).
  h = await startHarness({ dbStatementTimeoutMs: 60_000 });
  redis = h.deps.redis;
  keys = h.deps.config;
}, 60_000);
afterAll(async () => {
  await h?.close();
  delete process.env.TEST_REDIS_CLUSTER_NODES;
  await removeTestRedisCluster(cluster);
});

const single: RedisKeyConfig = { redisPrefix: 'teamchat', redisClusterNodes: [] };

test('on one Redis every key keeps its untagged name; on a cluster the grouping part is a hash tag', () => {
  const now = new Date('2026-11-24T12:00:00Z');
  expect(unitsKey(single, 'acct_1', 'usr_1', now)).toBe('teamchat:limits:units:acct_1:usr_1:2026-11-24');
  expect(minuteKey(single, 'acct_1', 'usr_1')).toBe('teamchat:limits:minute-window:acct_1:usr_1');
  expect(inFlightKey(single, 'acct_1')).toBe('teamchat:webhooks:inflight:acct_1');
  expect(signInEmailKey(single, 'h')).toBe('teamchat:signin:h');
  expect(signInAddressKey(single, 'h')).toBe('teamchat:signin-addr:h');
  expect(mcpKeyBase(single)).toBe('teamchat:mcp');
  expect(queuePrefix(single, 'webhook-delivery')).toBe('teamchat');
  expect(relayLeaseKey(single)).toBe('teamchat:webhooks:relay-lease');
  expect(manualDeliveryKey(single, 'replay', 'wh_1')).toBe('teamchat:webhooks:replay:wh_1');

  const onCluster: RedisKeyConfig = { redisPrefix: 'teamchat', redisClusterNodes: [{ host: 'h', port: 1 }] };
  expect(unitsKey(onCluster, 'acct_1', 'usr_1', now)).toBe('teamchat:limits:units:{acct_1}:usr_1:2026-11-24');
  expect(keySlot(unitsKey(onCluster, 'acct_1', 'usr_1', now))).toBe(keySlot(minuteKey(onCluster, 'acct_1', 'usr_2')));
  expect(keySlot(inFlightKey(onCluster, 'acct_1'))).toBe(keySlot(`${inFlightKey(onCluster, 'acct_1')}:demand`));
  expect(keySlot(signInEmailKey(onCluster, 'a'))).toBe(keySlot(signInAddressKey(onCluster, 'b')));
  expect(queuePrefix(onCluster, 'webhook-delivery')).toBe('{teamchat:webhook-delivery}');
  // keySlot agrees with Redis' own CLUSTER KEYSLOT (checked on the cluster below).
  expect(keySlot('123456789')).toBe(12739);
});

test('the cluster refuses one script over untagged keys of two slots (what the tags prevent), and agrees with keySlot', async () => {
  const a = unitsKey(single, 'acct_a', 'u', new Date());
  const b = unitsKey(single, 'acct_c', 'u', new Date());
  const node = new Redis(cluster.ports[0], '127.0.0.1');
  try {
    expect(Number(await node.call('CLUSTER', 'KEYSLOT', a))).toBe(keySlot(a));
    expect(Number(await node.call('CLUSTER', 'KEYSLOT', unitsKey(keys, 'acct_a', 'u', new Date())))).toBe(keySlot('acct_a'));
  } finally {
    node.disconnect();
  }
  expect(keySlot(a)).not.toBe(keySlot(b));
  await expect(redis.eval("return redis.call('GET', KEYS[1])", 2, a, b)).rejects.toThrow(/CROSSSLOT/);
});

test('a call charge (minute window + day units, one script) and a charge over seats of several accounts (one script per slot)', async () => {
  const now = h.deps.now();
  const limits = { ...h.deps.config.planLimits.pro, unitsPerDay: 10 };
  const accounts = Array.from({ length: 6 }, () => `acct_${randomToken(8)}`);
  expect(new Set(accounts.map((a) => keySlot(inFlightKey(keys, a)))).size).toBeGreaterThan(1);
  const call = await chargeCall({ seat: { redis, keys, accountId: accounts[0], seatUserId: 'usr_1', limits, now }, callsPerMinute: 5, log: createLogger('test', 'silent') });
  expect(call).toMatchObject({ degraded: false, minute: { used: 1 }, units: { allowed: true, used: 1 } });

  const charged = await chargeUnitsMany(redis, accounts.map((accountId, i) => ({ redis, keys, accountId, seatUserId: 'usr_1', limits, now, units: i + 1 })));
  expect(charged.map((c) => [c.allowed, c.used])).toEqual(accounts.map((_, i) => [true, i === 0 ? 2 : i + 1]));
  const again = await chargeUnitsMany(redis, accounts.map((accountId) => ({ redis, keys, accountId, seatUserId: 'usr_1', limits, now, units: 6 })));
  // each seat all or none: 2+6, 2+6, 3+6 and 4+6 fit in 10; 5+6 and 6+6 do not
  expect(again.map((c) => c.allowed)).toEqual([true, true, true, true, false, false]);
});

test('in-flight leases of several accounts taken and given back across slots; the cap holds per account', async () => {
  const a = await newAccount(h);
  const b = await newAccount(h);
  const c = await newAccount(h);
  const wanted = new Map([[a.accountId, 10], [b.accountId, 2], [c.accountId, 1]]);
  const leases = await acquireInFlightSlots(h.deps, wanted, 10_000);
  expect([leases.count(a.accountId), leases.count(b.accountId), leases.count(c.accountId)]).toEqual([4, 2, 1]); // cap max(4, ceil(1/25))
  expect(await redis.zcard(inFlightKey(keys, a.accountId))).toBe(4);
  const more = await acquireInFlightSlots(h.deps, new Map([[a.accountId, 1]]), 10_000);
  expect(more.count(a.accountId)).toBe(0);
  const slot = leases.detach(b.accountId)!;
  await leases.release();
  await releaseSlots(h.deps, [slot]);
  for (const acct of [a, b, c]) expect(await redis.zcard(inFlightKey(keys, acct.accountId))).toBe(0);
});

test('sign-in throttle (email and address reserved in one script), seat usage (one pipeline per account), manual-delivery windows', async () => {
  const r = await reserveSignIn(redis, keys, { email: `x-${randomToken(6)}@example.test`, address: '203.0.113.7' });
  await r.settle('failed');
  const acct = await newAccount(h);
  await addPerson(h, acct.accountId, 'member');
  const usage = await accountUsage(h.deps, { accountId: acct.accountId, plan: 'pro' });
  expect(usage.degraded).toBe(false);
  expect(usage.seats).toHaveLength(2);
  await assertManualDeliveryAllowed(redis, keys, 'test', `wh_${randomToken(6)}`, h.deps.logger);
});

test('the MCP seat cap evicts another session of the seat inside one script', async () => {
  const seats = new SeatCap(redis, keys, 60_000);
  const record = (id: string): SessionRecord => ({
    account_id: 'acct_mcp', user_id: 'usr_mcp', identity_id: 'idn', credential_id: 'crd', client: id, version: '1',
    opened_at: new Date().toISOString(), last_used_at: new Date().toISOString(),
  });
  expect(await seats.open('s1', record('s1'), 1)).toEqual([]);
  const evicted = await seats.open('s2', record('s2'), 1);
  expect(evicted.map((e) => e.id)).toEqual(['s1']);
  expect(await seats.wasEvicted('s1')).toBe(true);
  expect(await seats.touch('s2', record('s2'))).toBe(true);
  await seats.close('s2', record('s2'));
});

test('a producer connection to the cluster is ready and a worker connection waits for it (the roles of createRedisFor)', async () => {
  const worker = createRedisFor(h.deps.config, 'worker');
  try {
    await waitReady(worker);
    expect(worker.isCluster).toBe(true);
    expect(await worker.ping()).toBe('PONG');
  } finally {
    worker.disconnect();
  }
});
