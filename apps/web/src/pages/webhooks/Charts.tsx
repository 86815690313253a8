import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { client, unwrap } from '../../api/client';
import { ErrorNote } from '../../components/ui';

interface Stats {
  window: string;
  bucket: string;
  buckets: Array<{ start: string; delivered: number; failed: number; dead: number; other: number }>;
  latency_ms: { p50: number | null; p99: number | null };
  totals: { attempts: number; delivered: number; failed: number; dead: number };
}

/** Deliveries per hour (or day) by outcome and latency p50/p99, from the stats route (SQL aggregates). */
export function EndpointCharts({ accountId, endpointId }: { accountId: string; endpointId: string }) {
  const [window, setWindow] = useState<'24h' | '7d'>('24h');
  const stats = useQuery({
    queryKey: ['stats', accountId, endpointId, window],
    queryFn: () => unwrap(client.GET<Stats>('/accounts/{accountId}/webhooks/{endpointId}/stats', { params: { path: { accountId, endpointId }, query: { window } } })),
  });
  const s = stats.data;
  const max = Math.max(1, ...(s?.buckets ?? []).map((b) => b.delivered + b.failed + b.dead + b.other));
  return (
    <section aria-labelledby="charts-title">
      <h2 id="charts-title">Deliveries</h2>
      <div className="row" role="group" aria-label="Window">
        <button type="button" aria-pressed={window === '24h'} onClick={() => setWindow('24h')}>
          24 hours
        </button>
        <button type="button" aria-pressed={window === '7d'} onClick={() => setWindow('7d')}>
          7 days
        </button>
      </div>
      <ErrorNote error={stats.error} />
      {s && (
        <>
          <p>
            {s.totals.attempts} attempts: {s.totals.delivered} delivered, {s.totals.failed} failed, {s.totals.dead} dead. Latency p50{' '}
            {s.latency_ms.p50 ?? '—'} ms, p99 {s.latency_ms.p99 ?? '—'} ms.
          </p>
          <div className="chart" role="img" aria-label={`Deliveries per ${s.bucket} by outcome over ${window}`}>
            {s.buckets.map((b) => (
              <div className="bar" key={b.start} title={`${new Date(b.start).toLocaleString()}: ${b.delivered} delivered, ${b.failed} failed, ${b.dead} dead`}>
                <span className="seg bad" style={{ height: `${(b.dead / max) * 100}%` }} />
                <span className="seg warn" style={{ height: `${((b.failed + b.other) / max) * 100}%` }} />
                <span className="seg ok" style={{ height: `${(b.delivered / max) * 100}%` }} />
              </div>
            ))}
          </div>
        </>
      )}
    </section>
  );
}
