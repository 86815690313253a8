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
 * endpoint's creator"; retries, tests and replays included), through the shared daily counter:
 * each seat's charge is all or none, every seat in one Redis round trip (a single attempt
 * charges one seat one unit; a pipeline over many rows each seat its attempts).
 */
export async function chargeDeliveryUnits(
  deps: Pick<Deps, 'redis' | 'config' | 'now'>,
  charges: readonly DeliveryCharge[],
  /** the moment charged (its UTC day's counter); default now */
  at: Date = deps.now(),
): Promise<Array<{ allowed: boolean; resetsAt: Date | null }>> {
  if (!deps.config.limitsEnabled) return charges.map(() => ({ allowed: true, resetsAt: null }));
  const charged = await chargeUnitsMany(deps.redis, charges.map((c) => ({ ...seatAt(deps, c, at), units: c.units })));
  return charged.map((c) => ({ allowed: c.allowed, resetsAt: c.resetsAt }));
}

function seatAt(deps: Pick<Deps, 'redis' | 'config' | 'now'>, c: DeliveryCharge, at: Date) {
  return { ...seatOf(deps, c.accountId, c.plan as Plan, c.seatUserId), now: at };
}
