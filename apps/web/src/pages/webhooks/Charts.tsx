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
  const label = window === '24h' ? 'last 24 hours' : 'last 7 days';
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
      {/* the loaded charts' height is kept while they load, so nothing below moves under the pointer */}
      <div className="chart-body">
        {s && (
          <>
            <p data-testid="chart-totals">
              {label}: {s.totals.attempts} attempts: {s.totals.delivered} delivered, {s.totals.failed} failed, {s.totals.dead} dead.
            </p>
            <figure className="figure">
              <div className="chart" role="img" aria-label={`Deliveries per hour by outcome, ${label}: ${s.totals.delivered} delivered, ${s.totals.failed} failed, ${s.totals.dead} dead`}>
                {s.buckets.map((b) => (
                  <div className="bar" data-testid="chart-bar" data-count={b.delivered + b.failed + b.dead + b.other} key={b.start} title={`${new Date(b.start).toLocaleString()}: ${b.delivered} delivered, ${b.failed} failed, ${b.dead} dead`}>
                    <span className="seg bad" style={{ height: `${(b.dead / max) * 100}%` }} />
                    <span className="seg warn" style={{ height: `${((b.failed + b.other) / max) * 100}%` }} />
                    <span className="seg ok" style={{ height: `${(b.delivered / max) * 100}%` }} />
                  </div>
                ))}
              </div>
              <figcaption className="small muted">
                One bar per hour, oldest left; <span className="key ok">delivered</span> <span className="key warn">failed or retrying</span>{' '}
                <span className="key bad">dead</span>. Most in one hour: {max}.
              </figcaption>
            </figure>
            <h3>Latency</h3>
            <LatencyChart p50={s.latency_ms.p50} p99={s.latency_ms.p99} label={label} />
          </>
        )}
      </div>
    </section>
  );
}

/** p50 and p99 of the answer times over the window, as two bars on one scale (the p99's). */
function LatencyChart({ p50, p99, label }: { p50: number | null; p99: number | null; label: string }) {
  if (p50 === null || p99 === null) return <p>No answered attempts in the {label}.</p>;
  const scale = Math.max(1, p99);
  const rows: Array<[string, number]> = [
    ['p50', p50],
    ['p99', p99],
  ];
  return (
    <div className="latency" role="img" aria-label={`Latency, ${label}: p50 ${Math.round(p50)} ms, p99 ${Math.round(p99)} ms`}>
      {rows.map(([name, v]) => (
        <div className="latency-row" key={name}>
          <span>{name}</span>
          <span className="track">
            <span className="fill" style={{ width: `${(v / scale) * 100}%` }} />
          </span>
          <span>{Math.round(v)} ms</span>
        </div>
      ))}
    </div>
  );
}
