import Redis from 'ioredis';
import { removeTestRedisCluster, startTestRedisCluster, type TestRedisCluster } from '../support/redis-cluster';

/**
 * The webhook transition tests (packages/delivery/test/transitions.test.ts), unchanged, on a
 * three-master Redis Cluster (docs/operations.md "Redis Cluster"): the harness and the delivery
 * engine connect with REDIS_CLUSTER_NODES, so the queues, limits, in-flight leases and the relay
 * lease all run on the cluster. This file's beforeAll starts the cluster before the included
 * file's beforeAll builds its harness; its afterAll (declared after) stops it last.
 */
let cluster: TestRedisCluster | undefined;
beforeAll(async () => {
  cluster = await startTestRedisCluster();
  process.env.TEST_REDIS_CLUSTER_NODES = cluster.nodes;
  // Their setup hashes passwords inside transactions; beside a cluster of three more processes a
  // loaded machine outlasted the 5 s bound there. The statement bound is not what they test.
  process.env.TEST_HARNESS_DB_BOUND_MS = '60000';
}, 60_000);

require('../../packages/delivery/test/transitions.test');

test('those tests ran on the cluster: its nodes hold the queues\' keys, under the per-queue hash-tagged prefix', async () => {
  const sizes = await Promise.all(cluster!.ports.map(async (port) => {
    const node = new Redis(port, '127.0.0.1');
    try {
      return (await node.keys('{test-*:webhook-*}:*')).length;
    } finally {
      node.disconnect();
    }
  }));
  expect(sizes.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
});

afterAll(async () => {
  delete process.env.TEST_REDIS_CLUSTER_NODES;
  delete process.env.TEST_HARNESS_DB_BOUND_MS;
  await removeTestRedisCluster(cluster);
});
