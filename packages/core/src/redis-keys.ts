import type { Config } from './config';

/**
 * Every Redis key's name is made here (docs/operations.md "Redis keys"), so that a Redis Cluster
 * holds each multi-key operation on one hash slot:
 *
 * - on a cluster (REDIS_CLUSTER_NODES set) the part of a name that groups keys is a hash tag
 *   (`{...}`): the keys one Lua script or MULTI touches share their tag, so they share a slot;
 *   each BullMQ queue gets a prefix of its own, `{<prefix>:<queue>}` (BullMQ's documented form),
 *   so every key of one queue is on one slot and different queues spread over the nodes;
 * - on a single Redis the names are exactly the untagged ones, as they always were (no key
 *   changes name when nothing needs it to).
 *
 * What shares a slot on a cluster: a seat's minute window and its day's units (one script per
 * call); an account's in-flight lease set and its demand hash; every sign-in throttle key (the
 * email and the address counters are reserved together); every MCP session key (the seat cap
 * evicts other sessions' records in its script). Scripts over several accounts (a webhook
 * round's unit charges, in-flight leases) run once per slot on a cluster (redis.ts `bySlot`).
 */
export type RedisKeyConfig = Pick<Config, 'redisPrefix' | 'redisClusterNodes'>;

export function onCluster(c: RedisKeyConfig): boolean {
  return c.redisClusterNodes.length > 0;
}

/** `{part}` on a cluster (keys sharing it share a slot); `part` on a single Redis. */
function tag(c: RedisKeyConfig, part: string): string {
  return onCluster(c) ? `{${part}}` : part;
}

/** BullMQ's `prefix` option for `queue`: REDIS_PREFIX on a single Redis, `{REDIS_PREFIX:queue}` on a cluster. */
export function queuePrefix(c: RedisKeyConfig, queue: string): string {
  return onCluster(c) ? `{${c.redisPrefix}:${queue}}` : c.redisPrefix;
}

/**
 * The seat limits (spec: Limits rule 1, a seat is a person in an account):
 * `<REDIS_PREFIX>:limits:<what>:<accountId>:<userId>[:<UTC day>]`, the account id tagged on a cluster.
 * - `minute-window` — a hash `{ s: window start (ms, deps.now()), n: calls }`, the per-minute count;
 * - `units` … `:<YYYY-MM-DD>` — an integer, the call units spent that UTC day (API and worker).
 */
export type SeatLimitKind = 'minute-window' | 'units';

export function seatLimitKey(c: RedisKeyConfig, kind: SeatLimitKind, accountId: string, seatUserId: string, day?: string): string {
  const base = `${c.redisPrefix}:limits:${kind}:${tag(c, accountId)}:${seatUserId}`;
  return day === undefined ? base : `${base}:${day}`;
}

/** The account's webhook in-flight leases (a sorted set; its demand hash is this name + `:demand`). */
export function inFlightKey(c: RedisKeyConfig, accountId: string): string {
  return `${c.redisPrefix}:webhooks:inflight:${tag(c, accountId)}`;
}

/**
 * Where each worker process's dispatcher says since when rows of an account have waited in its
 * lanes (one hash, a field per process: delivery's lane-ages.ts), for the sweep to tell rows
 * waiting for a slot from rows whose wake-up was lost.
 */
export function laneAgesKey(c: RedisKeyConfig): string {
  return `${c.redisPrefix}:webhooks:lane-ages`;
}

/** The outbox relay's lease (one key); `scope` narrows it to a set of accounts (tests). */
export function relayLeaseKey(c: RedisKeyConfig, scope = ''): string {
  return `${c.redisPrefix}:webhooks:relay-lease${scope}`;
}

/** An endpoint's (or mirror's) counter of deliveries asked for by hand, of one kind, in the current window (one key). */
export function manualDeliveryKey(c: RedisKeyConfig, kind: 'test' | 'replay', targetId: string): string {
  return `${c.redisPrefix}:webhooks:${kind}:${targetId}`;
}

/** Sign-in throttle: failures per (hashed) email, attempts per (hashed) client address; one slot on a cluster. */
export function signInEmailKey(c: RedisKeyConfig, emailHash: string): string {
  return `${c.redisPrefix}:${tag(c, 'signin')}:${emailHash}`;
}
export function signInAddressKey(c: RedisKeyConfig, addressHash: string): string {
  return `${c.redisPrefix}:${tag(c, 'signin')}-addr:${addressHash}`;
}

/** The MCP session keys' common start (`<prefix>:mcp`); every MCP key is one slot on a cluster. */
export function mcpKeyBase(c: RedisKeyConfig): string {
  return `${c.redisPrefix}:${tag(c, 'mcp')}`;
}
