import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { outboxTransaction, recordEvents, sessionEvictedEvent, type Deps, type MessageSession } from '@teamchat/core';
import { DegradingSeatCap } from './degrading-seat-cap';
import type { SessionRecord } from './seat-cap';

/** An MCP session held by this process. */
export interface LiveSession {
  id: string;
  transport: StreamableHTTPServerTransport;
  server: Server;
  /** the credential that opened it; every later request must carry the same one */
  credentialId: string;
  accountId: string;
  /** the seat it counts against */
  userId: string;
  identityId: string;
  session: MessageSession;
  openedAt: Date;
  lastUsedAt: Date;
}

const recordOf = (s: LiveSession): SessionRecord => ({
  account_id: s.accountId,
  user_id: s.userId,
  identity_id: s.identityId,
  credential_id: s.credentialId,
  client: s.session.client,
  version: s.session.version,
  opened_at: s.openedAt.toISOString(),
  last_used_at: s.lastUsedAt.toISOString(),
});

/**
 * The sessions of this process (transports live in memory, so a session is pinned to the process
 * that opened it) and their bookkeeping: the per-seat cap with LRU eviction (in Redis; in this
 * process while Redis is away, degrading-seat-cap.ts), which writes a `session.evicted` outbox
 * row, and the idle timeout.
 */
export class SessionRegistry {
  private readonly live = new Map<string, LiveSession>();
  private readonly seats: DegradingSeatCap;
  private readonly idleMs: number;

  constructor(private readonly deps: Deps) {
    this.idleMs = deps.config.mcpSessionIdleMinutes * 60_000;
    this.seats = new DegradingSeatCap(deps, this.idleMs);
  }

  get(id: string): LiveSession | undefined {
    return this.live.get(id);
  }

  get size(): number {
    return this.live.size;
  }

  /**
   * Counts a new session against its seat. Past the plan's cap the seat's least recently used
   * sessions are evicted (closed here if this process holds them; refused on their next request
   * wherever they live) and each gets a `session.evicted` event row.
   */
  async open(s: LiveSession, cap: number): Promise<void> {
    this.live.set(s.id, s);
    const evicted = await this.seats.open(s.id, recordOf(s), cap);
    if (evicted.length === 0) return;
    // The `session.evicted` rows (subscribable, not sent), one per evicted session, in one transaction.
    await outboxTransaction(this.deps, (tx) => recordEvents(tx, evicted.map((e) => {
      const r = e.record;
      return sessionEvictedEvent({
        accountId: s.accountId,
        userId: s.userId,
        identityId: r?.identity_id ?? '',
        credentialId: r?.credential_id ?? '',
        session: { client: r?.client ?? '', version: r?.version ?? '' },
        openedAt: r ? new Date(r.opened_at) : this.deps.now(),
        lastUsedAt: r ? new Date(r.last_used_at) : this.deps.now(),
        cap,
      });
    })));
    for (const e of evicted) {
      this.deps.logger.info('mcp session evicted', { account_id: s.accountId, user_id: s.userId, cap, session_ref: e.id.slice(0, 8) });
      const local = this.live.get(e.id);
      if (local) await this.end(local, { evicted: true });
    }
  }

  /** Marks a request on the session; false when the seat's cap evicted it (the session is then ended here). */
  async touch(s: LiveSession): Promise<boolean> {
    s.lastUsedAt = this.deps.now();
    if (await this.seats.touch(s.id, recordOf(s))) return true;
    await this.end(s, { evicted: true });
    return false;
  }

  wasEvicted(id: string): Promise<boolean> {
    return this.seats.wasEvicted(id);
  }

  /** Forgets a session whose transport closed (DELETE /mcp, idle, eviction, shutdown). */
  async forget(s: LiveSession, opts: { evicted?: boolean } = {}): Promise<void> {
    if (this.live.get(s.id) !== s) return;
    this.live.delete(s.id);
    if (!opts.evicted) await this.seats.close(s.id, recordOf(s));
  }

  async end(s: LiveSession, opts: { evicted?: boolean } = {}): Promise<void> {
    await this.forget(s, opts);
    await s.transport.close().catch(() => undefined);
    await s.server.close().catch(() => undefined);
  }

  /** Ends the sessions of this process unused for the idle timeout. */
  async sweep(): Promise<number> {
    const cutoff = this.deps.now().getTime() - this.idleMs;
    const idle = [...this.live.values()].filter((s) => s.lastUsedAt.getTime() < cutoff);
    for (const s of idle) await this.end(s);
    return idle.length;
  }

  async closeAll(): Promise<void> {
    for (const s of [...this.live.values()]) await this.end(s);
  }
}
