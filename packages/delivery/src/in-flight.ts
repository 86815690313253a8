import { bySlot, countSeats, inFlightKey, randomToken, RedisScript, type Deps } from '@teamchat/core';

/**
 * Webhook deliveries in flight per account (spec: Limits): max(4, ceil(seats / 25)), never more
 * than 16, across every process. Each attempt holds a lease in a Redis sorted set (member = a
 * random token, score = its expiry in Redis's own clock), so a worker killed mid-attempt leaks
 * nothing: its lease simply expires (after the claim time, see schedule.ts).
 */
export function inFlightLimit(seats: number): number {
  return Math.min(16, Math.max(4, Math.ceil(seats / 25)));
}

/**
 * Takes leases for several accounts, several slots each, in one script (a single attempt asks for
 * one slot of one account; the dispatcher for every account with rows waiting): KEYS the accounts' lease sets; ARGV[1] lease
 * ms, ARGV[2] the asking process's id, ARGV[3] token prefix, then per key its limit and how many
 * slots are wanted. Expired leases are dropped first. Each lease's token is
 * process:prefix:keyIndex:i. Returns, per key, how many were granted (0..wanted) and the asking
 * process's share, flat: {granted1, share1, granted2, ...}.
 *
 * Fair share between processes: every ask records the process in the account's demand hash; the
 * processes that asked within the last DEMAND_MS or hold a slot of the account share the cap,
 * each granted no more than ceil(cap / their number) counting what it already holds. A lone
 * process gets the whole cap; two busy ones half each (the dispatcher keeps to the share Redis
 * last answered, dispatcher.ts). A process that holds slots counts whether or not it asked
 * lately: a dispatcher hands a slot from row to row for up to SLOT_HANDOFF_MS without asking, and
 * counted by its asks alone it dropped out of the other processes' count between them, so their
 * share flipped between the whole cap and half of it. A process told the whole cap claimed rows
 * for slots it then did not get, and gave those claims back once they were stale
 * (docs/performance.md "Two workers' claims given back"). A killed process counts until its
 * leases expire, as its leases hold their slots until then.
 */
const DEMAND_MS = 100;
const ACQUIRE = new RedisScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])
local owner = ARGV[2]
local ownerPrefix = owner .. ':'
local out = {}
for k = 1, #KEYS do
  local key = KEYS[k]
  local dkey = key .. ':demand'
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  local limit = tonumber(ARGV[2 + 2 * k])
  redis.call('HSET', dkey, owner, now)
  redis.call('PEXPIRE', dkey, 10 * ${DEMAND_MS})
  local members = redis.call('ZRANGE', key, 0, -1)
  local mine = 0
  local others = {}
  local active = 1
  for _, m in ipairs(members) do
    if string.sub(m, 1, #ownerPrefix) == ownerPrefix then mine = mine + 1
    else
      local o = string.match(m, '^[^:]*')
      if not others[o] then others[o] = true; active = active + 1 end
    end
  end
  local demand = redis.call('HGETALL', dkey)
  for i = 1, #demand, 2 do
    local o = demand[i]
    if tonumber(demand[i + 1]) < now - ${DEMAND_MS} then redis.call('HDEL', dkey, o)
    elseif o ~= owner and not others[o] then others[o] = true; active = active + 1 end
  end
  local share = math.ceil(limit / active)
  local n = math.min(limit - #members, tonumber(ARGV[3 + 2 * k]), share - mine)
  if n < 0 then n = 0 end
  for i = 1, n do
    redis.call('ZADD', key, now + lease, ownerPrefix .. ARGV[3] .. ':' .. k .. ':' .. i)
  end
  if n > 0 then redis.call('PEXPIRE', key, lease * 2) end
  out[2 * k - 1] = n
  out[2 * k] = share
end
return out
`);

/** This process's id in lease tokens and demand (fair share between worker processes). */
const PROCESS_ID = randomToken(8);

/**
 * Gives back leases of several accounts in one command: KEYS the accounts' lease sets; ARGV per
 * key how many tokens follow, then those tokens (a lease already expired or dropped is ignored).
 */
const RELEASE = new RedisScript(`
local i = 1
for k = 1, #KEYS do
  local n = tonumber(ARGV[i])
  if n > 0 then redis.call('ZREM', KEYS[k], unpack(ARGV, i + 1, i + n)) end
  i = i + 1 + n
end
return 0
`);

export interface Lease {
  release(): Promise<void>;
}

/** Seat counts change rarely; a minute-old count is good enough for the cap. */
const SEATS_TTL_MS = 60_000;
const seatCache = new Map<string, { seats: number; at: number }>();

async function seatsOf(deps: Pick<Deps, 'database'>, accountId: string): Promise<number> {
  const hit = seatCache.get(accountId);
  if (hit && Date.now() - hit.at < SEATS_TTL_MS) return hit.seats;
  const seats = await countSeats(deps.database.db, accountId);
  if (seatCache.size > 10_000) seatCache.clear();
  seatCache.set(accountId, { seats, at: Date.now() });
  return seats;
}

/** Takes one of the account's in-flight slots for `leaseMs`, or answers null when all are taken. */
export async function acquireInFlightSlot(
  deps: Pick<Deps, 'database' | 'redis' | 'config'>,
  accountId: string,
  leaseMs: number,
): Promise<Lease | null> {
  const leases = await acquireInFlightSlots(deps, new Map([[accountId, 1]]), leaseMs);
  return leases.count(accountId) === 1 ? leases : null;
}

/** One in-flight slot: its account's lease set and its token there. */
export interface Slot {
  key: string;
  token: string;
}

/** Gives back any number of slots, of any accounts, in one script (a slot already expired or given back is ignored). */
export async function releaseSlots(deps: Pick<Deps, 'redis'>, slots: readonly Slot[]): Promise<void> {
  const groups = bySlot(deps.redis, slots, (s) => s.key);
  if (groups.length > 1) {
    await Promise.all(groups.map((g) => releaseSlots(deps, g)));
    return;
  }
  const byKey = new Map<string, string[]>();
  for (const s of slots) {
    const tokens = byKey.get(s.key);
    if (tokens) tokens.push(s.token);
    else byKey.set(s.key, [s.token]);
  }
  if (byKey.size === 0) return;
  const keys = [...byKey.keys()];
  const args = [...byKey.values()].flatMap((tokens) => [String(tokens.length), ...tokens]);
  await RELEASE.run(deps.redis, keys, args);
}

/**
 * Slots of several accounts, taken together (one script). Each slot then goes its own way with
 * its attempt (`detach`); `release` gives back those not detached.
 */
export class Leases {
  constructor(
    private readonly deps: Pick<Deps, 'redis'>,
    private readonly held: Map<string, Slot[]>,
    /** Per account asked for: this process's share of the cap when the slots were asked for (see ACQUIRE; never above the cap). */
    readonly shares: ReadonlyMap<string, number> = new Map(),
  ) {}

  /** Several groups' slots and shares as one (their accounts are distinct). */
  static merge(deps: Pick<Deps, 'redis'>, parts: readonly Leases[]): Leases {
    return new Leases(deps, new Map(parts.flatMap((p) => [...p.held])), new Map(parts.flatMap((p) => [...p.shares])));
  }

  /** Slots held now for the account. */
  count(accountId: string): number {
    return this.held.get(accountId)?.length ?? 0;
  }

  /** Takes one of the account's slots out of the group (it goes with one attempt); null when none is left. */
  detach(accountId: string): Slot | null {
    return this.held.get(accountId)?.pop() ?? null;
  }

  /** Gives every slot still in the group back, in one script. */
  async release(): Promise<void> {
    const slots = [...this.held.values()].flat();
    this.held.clear();
    await releaseSlots(this.deps, slots).catch(() => undefined);
  }
}

/**
 * Takes up to `wanted.get(account)` in-flight slots of each account for `leaseMs`, in one
 * script: a batch's attempts of one account then run in that many lanes at once. Single attempts
 * (acquireInFlightSlot) take theirs the same way, so both share each account's cap across every
 * process; a killed worker's leases expire like any other.
 */
export async function acquireInFlightSlots(
  deps: Pick<Deps, 'database' | 'redis' | 'config'>,
  wanted: ReadonlyMap<string, number>,
  leaseMs: number,
  /** the asking process (tests stand in for another one); default this process */
  owner: string = PROCESS_ID,
): Promise<Leases> {
  const accounts = [...wanted.keys()];
  if (accounts.length === 0) return new Leases(deps, new Map());
  // On a Redis Cluster the accounts' lease sets lie on several slots: one script per slot.
  const groups = bySlot(deps.redis, accounts, (a) => inFlightKey(deps.config, a));
  if (groups.length > 1) {
    const parts = await Promise.all(groups.map((g) => acquireInFlightSlots(deps, new Map(g.map((a) => [a, wanted.get(a)!])), leaseMs, owner)));
    return Leases.merge(deps, parts);
  }
  const limits = await Promise.all(accounts.map(async (a) => inFlightLimit(await seatsOf(deps, a))));
  const keys = accounts.map((a) => inFlightKey(deps.config, a));
  const prefix = randomToken(16);
  const args = [String(leaseMs), owner, prefix, ...accounts.flatMap((a, k) => [String(limits[k]), String(Math.max(0, wanted.get(a)!))])];
  const counts = await ACQUIRE.run<number[]>(deps.redis, keys, args);
  const held = new Map(accounts.map((a, k) => [a, Array.from({ length: Number(counts[2 * k] ?? 0) }, (_, i) => ({ key: keys[k], token: `${owner}:${prefix}:${k + 1}:${i + 1}` }))]));
  const shares = new Map(accounts.map((a, k) => [a, Number(counts[2 * k + 1] ?? limits[k])]));
  return new Leases(deps, held, shares);
}
