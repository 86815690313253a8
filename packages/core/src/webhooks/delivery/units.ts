import type { Deps } from '../../context';
import { chargeUnits, seatOf } from '../../limits';
import type { Plan } from '../../plans';

/**
 * The ONE place a delivery attempt spends its call unit (spec: Limits, "1, on the seat of the
 * endpoint's creator"; retries, tests and replays included), through the shared daily counter.
 */
export async function chargeDeliveryUnit(
  deps: Pick<Deps, 'redis' | 'config' | 'now'>,
  input: { accountId: string; plan: string; seatUserId: string },
): Promise<{ allowed: boolean; resetsAt: Date | null }> {
  if (!deps.config.limitsEnabled) return { allowed: true, resetsAt: null };
  const charged = await chargeUnits({ ...seatOf(deps, input.accountId, input.plan as Plan, input.seatUserId), units: 1 });
  return { allowed: charged.allowed, resetsAt: charged.resetsAt };
}
