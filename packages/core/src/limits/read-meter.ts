import type { Logger } from '../logger';
import { redisAvailability } from './availability';
import { chargeUnits, readCost, type SeatRef, type UnitUsage } from './units';

/**
 * How a read is charged (spec: Limits, 1 unit per 16 KB returned, minimum 1). Its size is known
 * only once its body is built, so its first unit is reserved, checked, before the handler (with
 * the minute, call-charge.ts) and the rest — the tail — is charged unchecked when the body is
 * complete, before the response leaves: a client that has its answer also sees its cost counted.
 * A read whose body fits in 16 KB (most) costs no second round trip.
 *
 * The HTTP layer feeds the body's chunks to `add` and asks for `tail()` at the end.
 */
export class ReadMeter {
  private bytes = 0;

  add(chunk: unknown, encoding?: unknown): void {
    if (typeof chunk === 'string') this.bytes += Buffer.byteLength(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
    else if (chunk instanceof Uint8Array) this.bytes += chunk.byteLength;
  }

  /** The read's whole cost in units. */
  cost(): number {
    return readCost(this.bytes);
  }

  /** Units still to charge beyond the reserved one. */
  tail(): number {
    return this.cost() - 1;
  }
}

/**
 * Charges a read's tail, unchecked. Null when Redis is away (not charged; counted and logged as
 * a degraded decision) or the charge failed.
 */
export async function chargeReadTail(seat: SeatRef, units: number, log: Logger): Promise<UnitUsage | null> {
  return redisAvailability(seat.redis).inRedisElse('units_not_charged', log, seat.now.getTime(),
    () => chargeUnits({ ...seat, units, mode: 'regardless' }), () => null);
}
