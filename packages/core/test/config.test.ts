import type { Cluster, Redis } from 'ioredis';
import { ConfigError, listenDatabaseUrl, loadConfig } from '../src/config';
import { createRedisFor } from '../src/redis';

const KEY = 'ab'.repeat(32);

describe('config is validated once, at boot (README: Configuration)', () => {
  test('defaults match the documented env contract', () => {
    const c = loadConfig({ SECRETS_KEY: KEY });
    expect(c).toMatchObject({
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/teamchat',
      redisUrl: 'redis://127.0.0.1:6379',
      apiPort: 3000,
      webPort: 3001,
      publicApiUrl: 'http://localhost:3000',
      publicWebUrl: 'http://localhost:3001',
      limitsEnabled: true,
    });
    expect(Object.isFrozen(c)).toBe(true);
  });

  test('REDIS_CLUSTER_NODES, DATABASE_POOL_MODE and DATABASE_DIRECT_URL (docs/operations.md "Redis Cluster", "PgBouncer")', () => {
    const plain = loadConfig({ SECRETS_KEY: KEY });
    expect(plain).toMatchObject({ redisClusterNodes: [], databasePoolMode: 'session', databaseDirectUrl: null });
    expect(listenDatabaseUrl(plain)).toBe(plain.databaseUrl);
    const c = loadConfig({
      SECRETS_KEY: KEY, REDIS_CLUSTER_NODES: ' 10.0.0.1:7000, redis-b.internal:7001 ', DATABASE_POOL_MODE: 'transaction',
      DATABASE_URL: 'postgres://app@pgbouncer:6432/teamchat',
    });
    expect(c.redisClusterNodes).toEqual([{ host: '10.0.0.1', port: 7000 }, { host: 'redis-b.internal', port: 7001 }]);
    // behind PgBouncer in transaction mode without a direct URL the relay does not LISTEN (it polls)
    expect(listenDatabaseUrl(c)).toBeNull();
    const direct = loadConfig({ SECRETS_KEY: KEY, DATABASE_POOL_MODE: 'transaction', DATABASE_DIRECT_URL: 'postgres://app@db:5432/teamchat' });
    expect(listenDatabaseUrl(direct)).toBe('postgres://app@db:5432/teamchat');
    expect(() => loadConfig({ SECRETS_KEY: KEY, REDIS_CLUSTER_NODES: 'redis://a:1' })).toThrow(/REDIS_CLUSTER_NODES/);
    expect(() => loadConfig({ SECRETS_KEY: KEY, DATABASE_POOL_MODE: 'statement' })).toThrow(/DATABASE_POOL_MODE/);
  });

  test('REDIS_COMMAND_TIMEOUT_MS: 1,000 by default, 100-10,000, given to the producer connection only, on one Redis and on a Cluster\'s nodes (docs/limits.md "How \'away\' is decided")', () => {
    expect(loadConfig({ SECRETS_KEY: KEY }).redisCommandTimeoutMs).toBe(1_000);
    const c = loadConfig({ SECRETS_KEY: KEY, REDIS_COMMAND_TIMEOUT_MS: '2500', REDIS_URL: 'redis://127.0.0.1:1' });
    expect(c.redisCommandTimeoutMs).toBe(2_500);
    const producer = createRedisFor(c, 'producer');
    const worker = createRedisFor(c, 'worker');
    try {
      expect((producer as Redis).options.commandTimeout).toBe(2_500);
      expect((worker as Redis).options.commandTimeout).toBeUndefined();
    } finally {
      producer.disconnect();
      worker.disconnect();
    }
    const onCluster = loadConfig({ SECRETS_KEY: KEY, REDIS_COMMAND_TIMEOUT_MS: '2500', REDIS_CLUSTER_NODES: '127.0.0.1:1' });
    const clusterProducer = createRedisFor(onCluster, 'producer') as Cluster;
    const clusterWorker = createRedisFor(onCluster, 'worker') as Cluster;
    try {
      expect(clusterProducer.options.redisOptions?.commandTimeout).toBe(2_500);
      expect(clusterWorker.options.redisOptions?.commandTimeout).toBeUndefined();
    } finally {
      clusterProducer.disconnect();
      clusterWorker.disconnect();
    }
    expect(() => loadConfig({ SECRETS_KEY: KEY, REDIS_COMMAND_TIMEOUT_MS: '50' })).toThrow(/REDIS_COMMAND_TIMEOUT_MS/);
    // A frozen Redis costs a request up to this long: no longer than the API's other bounds.
    expect(() => loadConfig({ SECRETS_KEY: KEY, REDIS_COMMAND_TIMEOUT_MS: '10001' })).toThrow(/REDIS_COMMAND_TIMEOUT_MS/);
    expect(() => loadConfig({ SECRETS_KEY: KEY, REDIS_COMMAND_TIMEOUT_MS: 'soon' })).toThrow(/REDIS_COMMAND_TIMEOUT_MS/);
  });

  test('WORKER_ROLE: all by default, new or due (docs/operations.md "Worker roles"), nothing else', () => {
    expect(loadConfig({ SECRETS_KEY: KEY }).workerRole).toBe('all');
    expect(loadConfig({ SECRETS_KEY: KEY, WORKER_ROLE: 'new' }).workerRole).toBe('new');
    expect(loadConfig({ SECRETS_KEY: KEY, WORKER_ROLE: 'due' }).workerRole).toBe('due');
    expect(() => loadConfig({ SECRETS_KEY: KEY, WORKER_ROLE: 'relay' })).toThrow(/WORKER_ROLE/);
  });

  test('a bad value stops boot with a message naming it', () => {
    expect(() => loadConfig({ SECRETS_KEY: 'not-hex' })).toThrow(ConfigError);
    expect(() => loadConfig({ SECRETS_KEY: KEY, API_PORT: 'eighty' })).toThrow(/API_PORT/);
    expect(() => loadConfig({ SECRETS_KEY: KEY, DATABASE_URL: 'mysql://x' })).toThrow(/DATABASE_URL/);
  });

  test('SECRETS_KEY is mandatory in production (64 hex characters)', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/SECRETS_KEY is required/);
    expect(() => loadConfig({ NODE_ENV: 'production', SECRETS_KEY: 'ab'.repeat(31) })).toThrow(/SECRETS_KEY/);
    expect(loadConfig({ NODE_ENV: 'production', SECRETS_KEY: KEY }).secretsKey).toBe(KEY);
  });

  test('public URLs lose a trailing slash so links are built one way', () => {
    const c = loadConfig({ SECRETS_KEY: KEY, PUBLIC_API_URL: 'https://api.example.com/', PUBLIC_WEB_URL: 'https://app.example.com/' });
    expect(c.publicApiUrl).toBe('https://api.example.com');
    expect(c.publicWebUrl).toBe('https://app.example.com');
  });

  test('LIMITS_ENABLED=false is refused at boot when NODE_ENV=production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', SECRETS_KEY: KEY, LIMITS_ENABLED: 'false' })).toThrow(/LIMITS_ENABLED/);
    expect(() => loadConfig({ NODE_ENV: 'production', SECRETS_KEY: KEY }, { limitsEnabled: false })).toThrow(ConfigError);
    expect(loadConfig({ NODE_ENV: 'production', SECRETS_KEY: KEY, LIMITS_ENABLED: 'true' }).limitsEnabled).toBe(true);
    // benchmarks and development may still switch them off
    expect(loadConfig({ NODE_ENV: 'development', SECRETS_KEY: KEY, LIMITS_ENABLED: 'false' }).limitsEnabled).toBe(false);
  });
});
