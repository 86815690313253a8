import { redisAvailability, type Deps, type RedisAvailability } from '@teamchat/core';
import { LocalSeats } from './local-seats';
import { SeatCap, type EvictedSession, type SessionRecord } from './seat-cap';

/**
 * The per-seat cap on concurrent MCP sessions. Normally in Redis (seat-cap.ts), so the cap
 * holds across every MCP process. PostgreSQL is the truth and Redis only holds this bookkeeping,
 * so while Redis is away (down, refusing writes, or not answering within the command timeout)
 * no MCP request may fail for it (docs/limits.md "When Redis is away"): the cap is kept in this
 * process instead (local-seats.ts: this process's sessions of the seat, least recently used
 * evicted past the cap, an evicted session refused on its next request as usual), each such
 * decision counted and warned about as `mcp_sessions_local` (core limits/availability.ts).
 *
 * Nothing needs restarting when Redis answers again: a session opened meanwhile re-registers in
 * its seat on its next request (the TOUCH script adds it), and the sessions that left their seat
 * meanwhile (closed, idled out, evicted here) are removed from Redis before the next call, so an
 * OPEN neither counts them nor reports them evicted a second time.
 */
export class DegradingSeatCap {
  private readonly redisCap: SeatCap;
  private readonly local = new LocalSeats();
  private readonly availability: RedisAvailability;
  /**
   * Sessions that left their seat and are not yet removed from Redis (kept while Redis is away)
   * → when they left (ms, deps.now()). One older than the idle timeout is dropped: its record has
   * expired in Redis, so Redis forgets it by itself.
   */
  private readonly leaving = new Map<string, { record: SessionRecord; atMs: number }>();

  constructor(private readonly deps: Pick<Deps, 'redis' | 'config' | 'logger' | 'now'>, private readonly idleMs: number) {
    this.redisCap = new SeatCap(deps.redis, deps.config, idleMs);
    this.availability = redisAvailability(deps.redis);
  }

  /** Adds a session to its seat; returns the sessions evicted to stay within `cap`. */
  open(id: string, record: SessionRecord, cap: number): Promise<EvictedSession[]> {
    return this.inRedisElseLocal(async () => {
      const evicted = await this.redisCap.open(id, record, cap);
      this.local.use(id, record);
      for (const e of evicted) this.local.remove(e.id, record);
      return evicted;
    }, (nowMs) => {
      const evicted = this.local.open(id, record, cap, nowMs);
      for (const e of evicted) this.leave(e.id, e.record ?? record, nowMs);
      return evicted;
    });
  }

  /** Marks a use (it becomes the seat's most recent); false when the session was evicted. */
  touch(id: string, record: SessionRecord): Promise<boolean> {
    return this.inRedisElseLocal(async () => {
      const ok = await this.redisCap.touch(id, record);
      if (ok) this.local.use(id, record);
      else this.local.remove(id, record);
      return ok;
    }, (nowMs) => this.local.touch(id, record, nowMs));
  }

  /** Whether the cap evicted the session (so its next request is told why); false when unknown. */
  wasEvicted(id: string): Promise<boolean> {
    if (this.local.wasEvicted(id, this.deps.now().getTime())) return Promise.resolve(true);
    return this.inRedisElseLocal(() => this.redisCap.wasEvicted(id), () => false);
  }

  /** A session that ended (closed by the client, idle, or its process stopping) leaves its seat; best effort, never throws. */
  async close(id: string, record: SessionRecord): Promise<void> {
    this.local.remove(id, record);
    this.leave(id, record, this.deps.now().getTime());
    // The Redis path first removes every session in `leaving`, this one included.
    await this.inRedisElseLocal(async () => undefined, () => undefined);
  }

  /**
   * `inRedis` while Redis is usable (after removing from Redis the sessions in `leaving`), else
   * `inProcess`, counted and logged as `mcp_sessions_local` (core availability.ts `inRedisElse`).
   */
  private inRedisElseLocal<T>(inRedis: () => Promise<T>, inProcess: (nowMs: number) => T): Promise<T> {
    return this.availability.inRedisElse('mcp_sessions_local', this.deps.logger, this.deps.now().getTime(), async () => {
      await this.removeLeaving();
      return inRedis();
    }, inProcess);
  }

  private leave(id: string, record: SessionRecord, nowMs: number): void {
    // Entries are in the order they left, so the stale ones are at the front.
    for (const [old, l] of this.leaving) {
      if (nowMs - l.atMs <= this.idleMs) break;
      this.leaving.delete(old);
    }
    this.leaving.set(id, { record, atMs: nowMs });
  }

  private async removeLeaving(): Promise<void> {
    if (this.leaving.size === 0) return;
    const batch = [...this.leaving];
    await this.redisCap.closeMany(batch.map(([id, l]) => ({ id, record: l.record })));
    // Only what was sent: a session may have left meanwhile.
    for (const [id, l] of batch) if (this.leaving.get(id) === l) this.leaving.delete(id);
  }
}
