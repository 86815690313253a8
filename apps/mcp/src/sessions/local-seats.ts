import { EVICTED_MARKER_MS, type EvictedSession, type SessionRecord } from './seat-cap';

const seatKey = (r: SessionRecord) => `${r.account_id}:${r.user_id}`;

/**
 * The sessions this process holds, per seat, in last-use order: the per-seat cap's stand-in
 * while Redis is away (degrading-seat-cap.ts). It sees only this process's sessions, so during an outage a
 * seat may hold up to the cap in each MCP process; that is the price of answering at all.
 *
 * Kept up to date while Redis answers too, so that when Redis goes away the sessions opened
 * before the outage still count and can be evicted.
 */
export class LocalSeats {
  /** seat → session id → record; a Map keeps insertion order, and a use re-inserts, so the first entry is the least recently used */
  private readonly seats = new Map<string, Map<string, SessionRecord>>();
  /** session id → until when (ms, by the caller's clock) its eviction is remembered; oldest first */
  private readonly evicted = new Map<string, number>();

  private seatOf(record: SessionRecord): Map<string, SessionRecord> {
    const key = seatKey(record);
    let seat = this.seats.get(key);
    if (!seat) {
      seat = new Map();
      this.seats.set(key, seat);
    }
    return seat;
  }

  /** Marks a use: the session becomes its seat's most recent (added if this process did not know it). */
  use(id: string, record: SessionRecord): void {
    const seat = this.seatOf(record);
    seat.delete(id);
    seat.set(id, record);
  }

  /** Forgets a session of the seat `record` names (closed, or evicted by Redis). */
  remove(id: string, record: SessionRecord): void {
    const key = seatKey(record);
    const seat = this.seats.get(key);
    if (!seat) return;
    seat.delete(id);
    if (seat.size === 0) this.seats.delete(key);
  }

  /** Adds a session to its seat; past `cap` evicts the seat's least recently used (never the new one) and remembers them as evicted. */
  open(id: string, record: SessionRecord, cap: number, nowMs: number): EvictedSession[] {
    this.use(id, record);
    const seat = this.seatOf(record);
    const out: EvictedSession[] = [];
    for (const [other, otherRecord] of seat) {
      if (seat.size <= cap) break;
      if (other === id) continue;
      seat.delete(other);
      this.markEvicted(other, nowMs);
      out.push({ id: other, record: otherRecord });
    }
    return out;
  }

  /** A use of the session; false when this process evicted it. */
  touch(id: string, record: SessionRecord, nowMs: number): boolean {
    if (this.wasEvicted(id, nowMs)) return false;
    this.use(id, record);
    return true;
  }

  wasEvicted(id: string, nowMs: number): boolean {
    const until = this.evicted.get(id);
    return until !== undefined && nowMs < until;
  }

  private markEvicted(id: string, nowMs: number): void {
    // Every marker lives as long, so the expired ones are at the front.
    for (const [old, until] of this.evicted) {
      if (until > nowMs) break;
      this.evicted.delete(old);
    }
    this.evicted.set(id, nowMs + EVICTED_MARKER_MS);
  }
}
