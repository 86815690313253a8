import { redisOutageScenario } from '../faults/support/redis-outage';

/**
 * The fault suite's Redis scenario on a three-master Redis Cluster (docs/operations.md "Redis
 * Cluster", "Proof: the fault suite"): real API and worker processes connected with
 * REDIS_CLUSTER_NODES, every node killed under load and started again empty, then the ledger.
 * In `npm test` (not only the fault suite) so that every CI run proves the cluster path.
 */
redisOutageScenario('cluster', 600_000);
