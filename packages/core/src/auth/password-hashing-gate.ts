import { rateLimited } from '../limits/refusals';

/** Password checks (scrypt, ~32 MiB and ~50 ms each) run at once per process, in all. */
export const PASSWORD_HASHING_MAX = 8;
/** Of those, at most this many for one client address, so one address never takes them all. */
export const PASSWORD_HASHING_PER_ADDRESS = 2;

/**
 * The bound on concurrent password hashing in one process (docs/api.md "Hosts and sessions",
 * sign-in throttling). Excess is refused at once with 429 rate_limited (scope `sign_in`), never
 * queued: a queue behind a flood of sign-ins would delay every real one for seconds, and hold
 * its memory.
 */
export class PasswordHashingGate {
  private running = 0;
  private readonly perAddress = new Map<string, number>();

  constructor(private readonly max = PASSWORD_HASHING_MAX, private readonly maxPerAddress = PASSWORD_HASHING_PER_ADDRESS) {}

  /** Takes a slot for `addressKey` or throws 429; call the returned function when the hashing is done. */
  enter(addressKey: string): () => void {
    const mine = this.perAddress.get(addressKey) ?? 0;
    if (this.running >= this.max || mine >= this.maxPerAddress) {
      throw rateLimited({ scope: 'sign_in', retryAfterS: 1, message: (s) => `Too many sign-ins at once; retry after ${s} s.` });
    }
    this.running += 1;
    this.perAddress.set(addressKey, mine + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running -= 1;
      const left = (this.perAddress.get(addressKey) ?? 1) - 1;
      if (left > 0) this.perAddress.set(addressKey, left);
      else this.perAddress.delete(addressKey);
    };
  }
}
