import { rateLimited } from './refusals';

/**
 * The gate of expensive reads (search; docs/api.md "Expensive reads"), per process.
 * - A fixed share of the pool: at most `share` heavy reads run at once (a quarter of the pool,
 *   at least 1), so the other connections stay free for every other call.
 * - One at a time per account: an account's heavy reads queue behind each other, so one account
 *   can never hold more than one connection of the share.
 * - A bounded wait: at most `perAccountQueue` waiting per account, each at most `maxWaitMs`;
 *   beyond either the read is refused with 429 `rate_limited` (the caller's scope, `Retry-After`).
 * It sits around the use case, not in its SQL, so it holds whatever the query's plan; the
 * PostgreSQL statement_timeout bounds each read that runs.
 */
export class HeavyReadGate {
  readonly share: number;
  private readonly perAccountQueue: number;
  private readonly maxWaitMs: number;
  private running = 0;
  private readonly runningAccounts = new Set<string>();
  private readonly waitingPerAccount = new Map<string, number>();
  private readonly queue: { accountId: string; start: () => void }[] = [];

  /**
   * @param poolSize connections in the process's pool; the share is a quarter of it (at least 1)
   * @param maxWaitMs longest wait for a turn before a 429 (ms); twice this bound per queued read is the worst case
   * @param perAccountQueue reads of one account allowed to wait (default 2); more are refused at once
   */
  constructor(options: { poolSize: number; maxWaitMs: number; perAccountQueue?: number }) {
    this.share = Math.max(1, Math.floor(options.poolSize / 4));
    this.maxWaitMs = options.maxWaitMs;
    this.perAccountQueue = options.perAccountQueue ?? 2;
  }

  /** Runs `read` when the account's turn comes; refuses with 429 `rate_limited` (`scope`) when the wait is full or too long. */
  async run<T>(accountId: string, scope: string, read: () => Promise<T>): Promise<T> {
    if (!this.canStart(accountId)) await this.wait(accountId, scope);
    else this.take(accountId);
    try {
      return await read();
    } finally {
      this.running -= 1;
      this.runningAccounts.delete(accountId);
      this.next();
    }
  }

  private canStart(accountId: string): boolean {
    return this.running < this.share && !this.runningAccounts.has(accountId);
  }

  private take(accountId: string): void {
    this.running += 1;
    this.runningAccounts.add(accountId);
  }

  private refuse(scope: string) {
    return rateLimited({
      scope,
      retryAfterS: this.maxWaitMs / 1000,
      message: (s) => `Too many expensive reads of this account at once; retry after ${s} s.`,
    });
  }

  private wait(accountId: string, scope: string): Promise<void> {
    const waiting = this.waitingPerAccount.get(accountId) ?? 0;
    if (waiting >= this.perAccountQueue) return Promise.reject(this.refuse(scope));
    this.waitingPerAccount.set(accountId, waiting + 1);
    return new Promise<void>((resolve, reject) => {
      const entry = {
        accountId,
        start: () => {
          clearTimeout(timer);
          this.leaveQueue(entry);
          this.take(accountId);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.leaveQueue(entry);
        reject(this.refuse(scope));
      }, this.maxWaitMs);
      timer.unref();
      this.queue.push(entry);
    });
  }

  private leaveQueue(entry: { accountId: string }): void {
    const i = this.queue.indexOf(entry as (typeof this.queue)[number]);
    if (i >= 0) this.queue.splice(i, 1);
    const left = (this.waitingPerAccount.get(entry.accountId) ?? 1) - 1;
    if (left > 0) this.waitingPerAccount.set(entry.accountId, left);
    else this.waitingPerAccount.delete(entry.accountId);
  }

  /** Starts waiting reads in arrival order while the share and their accounts allow. */
  private next(): void {
    for (const entry of [...this.queue]) {
      if (this.running >= this.share) return;
      if (this.canStart(entry.accountId)) entry.start();
    }
  }
}
