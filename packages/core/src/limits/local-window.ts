/**
 * Fixed windows counted in this process only: the stand-in for a Redis counter while Redis is
 * away. Each process counts alone, so N API processes allow up to N times the limit.
 */
export interface LocalWindow {
  count: number;
  /** epoch ms at which this window ends */
  resetAt: number;
}

export class LocalWindowCounter {
  private readonly windows = new Map<string, LocalWindow>();
  private nextSweepAt = 0;

  /**
   * @param windowMs window length (ms)
   * @param maxKeys keys kept at most (default 100,000); past it the oldest windows are dropped
   */
  constructor(private readonly windowMs: number, private readonly maxKeys = 100_000) {}

  /** Counts `n` hits (default one) for `key` at `nowMs` (epoch ms); a window starts at its first hit. */
  hit(key: string, nowMs: number, n = 1): LocalWindow {
    this.sweep(nowMs);
    let w = this.windows.get(key);
    if (!w || nowMs >= w.resetAt || nowMs < w.resetAt - this.windowMs) {
      w = { count: 0, resetAt: nowMs + this.windowMs };
      this.windows.delete(key);
      this.windows.set(key, w);
    }
    w.count += n;
    return { ...w };
  }

  /** The current window of `key`, or undefined when none is open. */
  peek(key: string, nowMs: number): LocalWindow | undefined {
    const w = this.windows.get(key);
    return w && nowMs < w.resetAt && nowMs >= w.resetAt - this.windowMs ? { ...w } : undefined;
  }

  /** Gives back one hit of `key`'s open window (a refunded attempt); nothing when none is open. */
  unhit(key: string, nowMs: number): void {
    const w = this.windows.get(key);
    if (w && nowMs < w.resetAt && w.count > 0) w.count -= 1;
  }

  reset(key: string): void {
    this.windows.delete(key);
  }

  private sweep(nowMs: number): void {
    if (nowMs < this.nextSweepAt && this.windows.size < this.maxKeys) return;
    this.nextSweepAt = nowMs + this.windowMs;
    for (const [key, w] of this.windows) if (nowMs >= w.resetAt) this.windows.delete(key);
    // Still full: drop the oldest (Map keeps insertion order, and a new window re-inserts its key).
    for (const key of this.windows.keys()) {
      if (this.windows.size < this.maxKeys) break;
      this.windows.delete(key);
    }
  }
}
