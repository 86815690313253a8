/**
 * Batching that grows only with the load: `add(item)` runs `run([item])` at once when nothing is
 * under way; items added while a run is under way wait for it and go together in the next run.
 * No timer, no fixed wait: on an idle system every item goes alone and at once.
 */
export class Coalescer<T, R> {
  private pending: Array<{ item: T; resolve: (r: R) => void; reject: (e: unknown) => void }> = [];
  private running = false;

  constructor(private readonly run: (items: T[]) => Promise<R[]>) {}

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (!this.running) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.running = true;
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
