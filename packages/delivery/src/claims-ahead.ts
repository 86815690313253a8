import type { DeliveryContext } from '@teamchat/core';

/**
 * How long a row claimed ahead of its slot may be sent on the read its claim made. Past it the
 * row's claim is given back and the row claimed and read again like any other: an endpoint
 * changed, disabled or deleted meanwhile is seen. The claim itself lasts the claim time (answer
 * time + 5 s), so an attempt started within this window ends with its claim to spare.
 */
export const CLAIM_AHEAD_FRESH_MS = 250;

/** A row claimed ahead: as its claim read it, the claim it holds, and when it was taken (Date.now()). */
export interface HeldClaim {
  ctx: DeliveryContext;
  claim: Date;
  at: number;
}

/**
 * Rows of a dispatcher's lanes CLAIMED AHEAD of their slots (docs/webhooks.md "The delivery
 * engine", 6): while an account's attempts are on the wire, the pipeline claims and reads the
 * rows that will take their slots next, so a slot that comes off the wire goes straight to a
 * POST with no round trip in between. A slot then spans only the attempt (the spec's "in
 * flight"), not the claim before it. At most CLAIMS_AHEAD_PER_SLOT times the account's share
 * of rows is claimed ahead; rows claimed at a fan-out's write (Dispatcher.claimable) are held here too.
 *
 * Each entry is the claim's promise (its statement may still be under way); it settles with the
 * row's HeldClaim, or undefined when the statement did not claim the row (closed, not due,
 * claimed elsewhere) or failed.
 */
export class ClaimsAhead {
  private readonly rows = new Map<string, { accountId: string; held: Promise<HeldClaim | undefined> }>();
  private readonly perAccount = new Map<string, number>();

  has(id: string): boolean {
    return this.rows.has(id);
  }

  /** Rows of the account claimed ahead and not yet taken. */
  countOf(accountId: string): number {
    return this.perAccount.get(accountId) ?? 0;
  }

  add(id: string, accountId: string, held: Promise<HeldClaim | undefined>): void {
    if (this.rows.has(id)) return;
    this.rows.set(id, { accountId, held });
    this.perAccount.set(accountId, this.countOf(accountId) + 1);
  }

  /** The row's claim, taken out (the pipeline that runs the row owns it from here), or undefined. */
  take(id: string): Promise<HeldClaim | undefined> | undefined {
    const entry = this.rows.get(id);
    if (!entry) return undefined;
    this.rows.delete(id);
    const left = this.countOf(entry.accountId) - 1;
    if (left > 0) this.perAccount.set(entry.accountId, left);
    else this.perAccount.delete(entry.accountId);
    return entry.held;
  }

  /** Every claim held (a closing dispatcher gives them back), taken out. */
  takeAll(): Array<Promise<HeldClaim | undefined>> {
    const all = [...this.rows.values()].map((e) => e.held);
    this.rows.clear();
    this.perAccount.clear();
    return all;
  }
}
