import type { Socket } from 'node:net';
import Redis, { Cluster, RedisOptions } from 'ioredis';
import { DEFAULT_REDIS_COMMAND_TIMEOUT_MS, type Config } from './config';
import type { Logger } from './logger';

/** One Redis or a Redis Cluster (REDIS_CLUSTER_NODES); every key is named by redis-keys.ts. */
export type RedisClient = Redis | Cluster;

/**
 * Redis connections. Producers (the API) fail fast instead of queueing commands while Redis is
 * away, and give up on a command after `commandTimeoutMs` (REDIS_COMMAND_TIMEOUT_MS); workers
 * wait for it (BullMQ requires maxRetriesPerRequest: null for blocking commands).
 *
 * A producer never sends a command again on a new connection: its caller was told the command
 * failed (it timed out, or the connection closed under it) and decided without Redis (docs/limits.md
 * "When Redis is away"), so a later run would act behind its back: a slot script holding a slot
 * nobody releases, a unit charged twice. ioredis resends the commands left unanswered on a closed
 * connection once it connects again unless told not to; a producer's dropped command still settles,
 * by its command timeout. A worker's commands (BullMQ's, which wait without a timeout) are resent.
 */
export function createRedis(
  url: string, role: 'producer' | 'worker', extra: RedisOptions = {}, commandTimeoutMs = DEFAULT_REDIS_COMMAND_TIMEOUT_MS,
): Redis {
  const redis = new Redis(url, { ...roleOptions(role, commandTimeoutMs), ...extra });
  if (role === 'producer') coalesceWrites(redis);
  // Without a listener an unreachable Redis would crash the process with an unhandled 'error'.
  redis.on('error', () => undefined);
  return redis;
}

function roleOptions(role: 'producer' | 'worker', commandTimeoutMs: number): RedisOptions {
  return role === 'producer'
    ? { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: commandTimeoutMs, autoResendUnfulfilledCommands: false }
    : { maxRetriesPerRequest: null };
}

/**
 * The process's Redis connection of `role` as configured: a Redis Cluster client when
 * REDIS_CLUSTER_NODES is set (it learns the other nodes and the slot map from the start-up
 * nodes, and follows MOVED/ASK redirections), else one Redis at REDIS_URL. The roles' options
 * are the same either way; on a cluster they apply to each node's connection, and the producer
 * also refuses commands while the cluster is not ready.
 */
export function createRedisFor(
  config: Pick<Config, 'redisUrl' | 'redisClusterNodes' | 'redisCommandTimeoutMs'>, role: 'producer' | 'worker',
): RedisClient {
  if (config.redisClusterNodes.length === 0) return createRedis(config.redisUrl, role, {}, config.redisCommandTimeoutMs);
  const cluster = new Cluster(config.redisClusterNodes.map((n) => ({ host: n.host, port: n.port })), {
    enableOfflineQueue: role === 'worker',
    redisOptions: roleOptions(role, config.redisCommandTimeoutMs),
    // A cluster whose nodes are all away is tried again every second, like one Redis (ioredis' default gives up on none).
    clusterRetryStrategy: () => 1000,
  });
  cluster.on('error', () => undefined);
  return cluster;
}

/** The hash slot (0..16383) of a key, as Redis Cluster computes it: CRC16 of the hash tag's content when there is one. */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of Buffer.from(key)) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

/**
 * Items whose keys one script touches, cut into groups of one hash slot each on a cluster (a
 * script may only touch keys of one slot there); on one Redis a single group, so the script
 * runs once as it always did. Order within a group is kept.
 */
export function bySlot<T>(redis: RedisClient, items: readonly T[], keyOf: (item: T) => string): T[][] {
  if (!redis.isCluster || items.length <= 1) return [[...items]];
  const groups = new Map<number, T[]>();
  for (const item of items) {
    const slot = keySlot(keyOf(item));
    const group = groups.get(slot);
    if (group) group.push(item);
    else groups.set(slot, [item]);
  }
  return [...groups.values()];
}

/**
 * Commands a producer sends in one turn of the event loop leave in one socket write: the socket
 * is corked at the first command and uncorked at the end of the turn (setImmediate). Under load
 * the limit checks of many requests then cost one write system call instead of one each; a lone
 * command waits only for the rest of the current turn.
 */
function coalesceWrites(redis: Redis): void {
  redis.on('connect', () => {
    const socket = redis.stream as Socket & { [CORKED]?: true };
    if (!socket || socket[CORKED]) return;
    socket[CORKED] = true;
    const write = socket.write;
    let corked = false;
    const uncork = () => {
      corked = false;
      socket.uncork();
    };
    socket.write = function coalescedWrite(this: Socket, ...args: Parameters<Socket['write']>) {
      if (!corked) {
        corked = true;
        socket.cork();
        setImmediate(uncork);
      }
      return write.apply(this, args);
    } as Socket['write'];
  });
}
const CORKED = Symbol('teamchat.corked');

/** How often a process checks that its Redis connection still answers, and how long a PING may take (ms). */
export const REDIS_WATCH_EVERY_MS = 2000;
export const REDIS_WATCH_TIMEOUT_MS = 3000;
/** PINGs unanswered in a row before the connection is replaced: one slow answer is not silence. */
export const REDIS_WATCH_MISSES = 2;

/**
 * Replaces a Redis connection that has gone silent. A connection whose other end went away
 * without a word (the Redis host lost, a failover that moved its address: no reset reaches this
 * side) stays `ready` for as long as TCP takes to give up, about 15 minutes, and every command
 * on it times out or waits, though a new connection would be answered. So every
 * REDIS_WATCH_EVERY_MS a ready connection is sent a PING; REDIS_WATCH_MISSES in a row
 * unanswered within REDIS_WATCH_TIMEOUT_MS (or the command timeout, if shorter) close the
 * socket and connect again (the commands still waiting are sent again on the new connection
 * only on a worker's connection: createRedis). A frozen Redis is
 * reconnected to the same way, which costs nothing: it answered nothing anyway. Returns the stop.
 */
export function watchRedisConnection(redis: RedisClient, logger: Pick<Logger, 'warn'>, everyMs = REDIS_WATCH_EVERY_MS, timeoutMs = REDIS_WATCH_TIMEOUT_MS): () => void {
  let probing = false;
  let misses = 0;
  const timer = setInterval(() => {
    if (probing || redis.status !== 'ready') return;
    probing = true;
    let settled = false;
    const settle = (answered: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(silent);
      probing = false;
      misses = answered ? 0 : misses + 1;
      if (misses < REDIS_WATCH_MISSES || redis.status !== 'ready') return;
      misses = 0;
      logger.warn('Redis connection silent: connecting again', { unanswered_pings: REDIS_WATCH_MISSES });
      redis.disconnect(true);
    };
    const silent = setTimeout(() => settle(false), timeoutMs);
    redis.ping().then(
      () => settle(true),
      // A reply error is an answer (the connection carries bytes); a command timeout is not.
      (err: Error) => settle(err.name === 'ReplyError'),
    );
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** A queue consumer's Redis connection and how to let it go. */
export interface ConsumerConnection {
  redis: RedisClient;
  /** stops the watch and disconnects */
  close(): void;
}

/**
 * A queue consumer's own connection (BullMQ workers: the job runner, the fan-out and delivery
 * wake-ups), with the worker role's options and watched like every process's own
 * (watchRedisConnection): a consumer waits without a command timeout, and BullMQ replaces only
 * its blocking connection by itself, so a silent one would stop taking jobs until TCP gives up.
 */
export function consumerConnection(
  config: Pick<Config, 'redisUrl' | 'redisClusterNodes' | 'redisCommandTimeoutMs'>, logger: Pick<Logger, 'warn'>,
): ConsumerConnection {
  const redis = createRedisFor(config, 'worker');
  const stopWatching = watchRedisConnection(redis, logger);
  return {
    redis,
    close() {
      stopWatching();
      redis.disconnect();
    },
  };
}

/** How long a serving process (API, MCP) waits for Redis at start before it starts without it. */
export const REDIS_START_WAIT_MS = 5000;

/**
 * A serving process's start: it waits up to REDIS_START_WAIT_MS for Redis, then starts without
 * it, saying so. The API and the MCP server serve while Redis is away (docs/limits.md "When Redis
 * is away"), so they start then too: a replica restarted during a Redis outage comes back,
 * degraded, rather than failing; the connection keeps trying and everything uses Redis once it
 * answers.
 */
export async function waitReadyOrStartWithout(redis: RedisClient, logger: Pick<Logger, 'warn'>, timeoutMs = REDIS_START_WAIT_MS): Promise<void> {
  await waitReady(redis, timeoutMs).catch(() =>
    logger.warn('starting without Redis: it did not answer; limits are counted in this process until it does', { waited_ms: timeoutMs }));
}

/** Resolves once the connection is ready (a producer with enableOfflineQueue:false needs this at boot). */
export async function waitReady(redis: RedisClient, timeoutMs = 5000): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('Redis did not become ready in time')), timeoutMs);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
