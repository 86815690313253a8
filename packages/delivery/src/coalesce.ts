/**
 * Batching that grows only with the load: `add(item)` starts a run at the end of the event
 * loop's current turn (`setImmediate`) when nothing is under way, and items added meanwhile go
 * in it: the answers read from one poll of the sockets (two deliveries of one post answered
 * together, say) share one run instead of the second waiting for the first's. Items added while
 * a run is under way wait for it and go together in the next run. No timer, no fixed wait: on an
 * idle system an item waits only for the turn it was added in to end.
 */
export class Coalescer<T, R> {
  private pending: Array<{ item: T; resolve: (r: R) => void; reject: (e: unknown) => void }> = [];
  private running = false;

  constructor(private readonly run: (items: T[]) => Promise<R[]>) {}

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (!this.running) {
        this.running = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
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
  }
}
