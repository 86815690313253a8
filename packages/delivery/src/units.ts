import { chargeUnitsMany, seatOf, type Deps, type Plan } from '@teamchat/core';

/** Attempts to charge to one seat: `units` attempts on the seat of the endpoint's creator. */
export interface DeliveryCharge {
  accountId: string;
  plan: string;
  seatUserId: string;
  units: number;
}

/**
 * The ONE place delivery attempts spend their call units (spec: Limits, "1, on the seat of the
 * endpoint's creator"; retries, tests and replays included), through the shared daily counter,
 * every seat in one Redis round trip (a single attempt charges one seat one unit; a pipeline over
 * many rows each seat its attempts). Each attempt is a unit of its own, so a seat is charged as
 * many of its attempts as it has units left (`granted`): with 3 left, 3 of its 4 attempts go
 * and the 4th waits for the reset (spec: "while that seat's units are spent, deliveries wait").
 */
export async function chargeDeliveryUnits(
  deps: Pick<Deps, 'redis' | 'config' | 'now'>,
  charges: readonly DeliveryCharge[],
  /** the moment charged (its UTC day's counter); default now */
  at: Date = deps.now(),
): Promise<Array<{ granted: number; resetsAt: Date | null }>> {
  if (!deps.config.limitsEnabled) return charges.map((c) => ({ granted: c.units, resetsAt: null }));
  const charged = await chargeUnitsMany(deps.redis, charges.map((c) => ({ ...seatAt(deps, c, at), units: c.units, mode: 'partial' as const })));
  return charged.map((c) => ({ granted: c.charged, resetsAt: c.resetsAt }));
}

function seatAt(deps: Pick<Deps, 'redis' | 'config' | 'now'>, c: DeliveryCharge, at: Date) {
  return { ...seatOf(deps, c.accountId, c.plan as Plan, c.seatUserId), now: at };
}
