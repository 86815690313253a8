import { chargeUnitsMany, refundUnitsMany, seatOf, type Deps, type Plan } from '@teamchat/core';

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
 * charges one seat one unit; a batch round each seat its attempts).
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

/**
 * Gives back units chargeDeliveryUnits spent on attempts that were then not made (a round's
 * endpoint disabled meanwhile), to the counter of the day they were charged on (`at`, as passed
 * to the charge): a refund after midnight never adds to the new day's units.
 */
export async function refundDeliveryUnits(deps: Pick<Deps, 'redis' | 'config' | 'now'>, charges: readonly DeliveryCharge[], at: Date): Promise<void> {
  if (!deps.config.limitsEnabled || charges.length === 0) return;
  await refundUnitsMany(deps.redis, charges.map((c) => ({ ...seatAt(deps, c, at), units: c.units })));
}

function seatAt(deps: Pick<Deps, 'redis' | 'config' | 'now'>, c: DeliveryCharge, at: Date) {
  return { ...seatOf(deps, c.accountId, c.plan as Plan, c.seatUserId), now: at };
}
