/**
 * How long a run gathers items when no caller waits for their results: the close of a quick 2xx
 * whose slot is already free, a slot going back to Redis. Two answers of one post read a turn
 * apart then share one statement, and under load each statement carries twice the rows or more
 * (docs/performance.md "Writes nobody waits for"). Nothing on an event's way to its receiver
 * waits on it.
 */
export const GATHER_MS = 5;

/**
 * Batching that grows only with the load: `add(item)` starts a run at the end of the event
 * loop's current turn (`setImmediate`) when nothing is under way, and items added meanwhile go
 * in it: the answers read from one poll of the sockets (two deliveries of one post answered
 * together, say) share one run instead of the second waiting for the first's. Items added while
 * a run is under way wait for it and go together in the next run. By default no timer, no fixed
 * wait: on an idle system an item waits only for the turn it was added in to end.
 *
 * With `gatherMs` (only for work no caller waits for, GATHER_MS) a run starts that long after the
 * first item instead, and takes every item added meanwhile; `drain()` starts it at once.
 */
export class Coalescer<T, R> {
  private pending: Array<{ item: T; resolve: (r: R) => void; reject: (e: unknown) => void }> = [];
  private running = false;
  /** the gather's timer, while the next run waits for it */
  private timer: NodeJS.Timeout | null = null;
  /** drain()s waiting for the runs under way to end */
  private idle: Array<() => void> = [];

  constructor(
    private readonly run: (items: T[]) => Promise<R[]>,
    private readonly options: { gatherMs?: number } = {},
  ) {}

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (!this.running) {
        this.running = true;
        const gatherMs = this.options.gatherMs ?? 0;
        if (gatherMs > 0) this.timer = setTimeout(() => void this.flush(), gatherMs);
        else setImmediate(() => void this.flush());
      }
    });
  }

  /** Starts a gathering run now, and resolves once every run under way has ended (a closing process's last writes). */
  async drain(): Promise<void> {
    if (!this.running) return;
    const ended = new Promise<void>((resolve) => this.idle.push(resolve));
    if (this.timer) void this.flush();
    await ended;
  }

  private async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    while (this.pending.length > 0) {
      const batch = this.pending;
      this.pending = [];
      try {
        const results = await this.run(batch.map((b) => b.item));
        batch.forEach((b, i) => b.resolve(results[i]));
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
    this.running = false;
    for (const resolve of this.idle.splice(0)) resolve();
  }
}
