import { mcpKeyBase, type RedisClient, type RedisKeyConfig } from '@teamchat/core';

/**
 * The per-seat cap on concurrent MCP sessions, kept in Redis so every MCP process agrees
 * (`<prefix>:mcp` is redis-keys.ts `mcpKeyBase`, one hash slot on a Redis Cluster: the scripts
 * below touch other sessions' keys):
 *   <prefix>:mcp:seat:<accountId>:<userId>   sorted set: session id → last-use order (a global counter, so ties never happen)
 *   <prefix>:mcp:session:<sessionId>         the session's record (JSON), expiring after the idle timeout
 *   <prefix>:mcp:evicted:<sessionId>         set when the cap evicts a session, so whichever process holds it refuses its next request
 *   <prefix>:mcp:lru                         the last-use counter
 * A session whose record expired (its process died, or it idled out) is dropped from its seat
 * quietly: that is not an eviction.
 */

export interface SessionRecord {
  account_id: string;
  user_id: string;
  identity_id: string;
  credential_id: string;
  client: string;
  version: string;
  opened_at: string;
  last_used_at: string;
}

/** How long an eviction is remembered, so the evicted session's next request is told why (ms). */
export const EVICTED_MARKER_MS = 24 * 60 * 60 * 1000;

/**
 * KEYS: seat set, lru counter, this session's record. ARGV: session id, record JSON, record TTL ms,
 * cap, record key prefix, evicted key prefix, evicted marker TTL ms.
 * Returns [evictedId, evictedRecordJson, ...], least recently used first.
 */
const OPEN = `
local seq = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[1], seq, ARGV[1])
redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
local live = {}
for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if redis.call('EXISTS', ARGV[5] .. m) == 1 then table.insert(live, m) else redis.call('ZREM', KEYS[1], m) end
end
local over = #live - tonumber(ARGV[4])
local out = {}
for _, m in ipairs(live) do
  if over <= 0 then break end
  if m ~= ARGV[1] then
    table.insert(out, m)
    table.insert(out, redis.call('GET', ARGV[5] .. m))
    redis.call('ZREM', KEYS[1], m)
    redis.call('DEL', ARGV[5] .. m)
    redis.call('SET', ARGV[6] .. m, '1', 'PX', ARGV[7])
    over = over - 1
  end
end
return out
`;

/** KEYS: seat set, lru counter, record, evicted marker. ARGV: session id, record JSON, TTL ms. 0 = evicted. */
const TOUCH = `
if redis.call('EXISTS', KEYS[4]) == 1 then return 0 end
local seq = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[1], seq, ARGV[1])
redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`;

/** One evicted session and its record (null when its record had already gone). */
export interface EvictedSession {
  id: string;
  record: SessionRecord | null;
}

/** Every call may throw while Redis is away; degrading-seat-cap.ts decides what then. */
export class SeatCap {
  private readonly base: string;
  constructor(private readonly redis: RedisClient, keys: RedisKeyConfig, private readonly idleMs: number) {
    this.base = mcpKeyBase(keys);
  }

  private seatKey = (r: Pick<SessionRecord, 'account_id' | 'user_id'>) => `${this.base}:seat:${r.account_id}:${r.user_id}`;
  private recordKey = (id: string) => `${this.base}:session:${id}`;
  private evictedKey = (id: string) => `${this.base}:evicted:${id}`;
  private lruKey = () => `${this.base}:lru`;

  /** Adds a session to its seat; returns the sessions evicted to stay within `cap`. */
  async open(id: string, record: SessionRecord, cap: number): Promise<EvictedSession[]> {
    const out = (await this.redis.eval(
      OPEN, 3, this.seatKey(record), this.lruKey(), this.recordKey(id),
      id, JSON.stringify(record), this.idleMs, cap, this.recordKey(''), this.evictedKey(''), EVICTED_MARKER_MS,
    )) as Array<string | null>;
    const evicted: EvictedSession[] = [];
    for (let i = 0; i < out.length; i += 2) evicted.push({ id: out[i]!, record: out[i + 1] ? (JSON.parse(out[i + 1]!) as SessionRecord) : null });
    return evicted;
  }

  /** Marks a use (it becomes the seat's most recent); false when the session was evicted. */
  async touch(id: string, record: SessionRecord): Promise<boolean> {
    const ok = await this.redis.eval(
      TOUCH, 4, this.seatKey(record), this.lruKey(), this.recordKey(id), this.evictedKey(id), id, JSON.stringify(record), this.idleMs,
    );
    return ok === 1;
  }

  async wasEvicted(id: string): Promise<boolean> {
    return (await this.redis.exists(this.evictedKey(id))) === 1;
  }

  /** A session that ended (closed by the client, idle, or its process stopping) leaves its seat. */
  close(id: string, record: SessionRecord): Promise<void> {
    return this.closeMany([{ id, record }]);
  }

  /** Sessions that ended leave their seats, in one round trip. */
  async closeMany(sessions: ReadonlyArray<{ id: string; record: SessionRecord }>): Promise<void> {
    if (sessions.length === 0) return;
    const tx = this.redis.multi();
    for (const s of sessions) tx.zrem(this.seatKey(s.record), s.id).del(this.recordKey(s.id));
    await tx.exec();
  }
}
