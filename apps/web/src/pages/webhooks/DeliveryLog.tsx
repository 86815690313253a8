import { useEffect, useState } from 'react';
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useUrlParams } from '../../components/url-params';
import { client, unwrap, type Page } from '../../api/client';
import type { Delivery } from '../../api/types';
import { DELIVERY_STATUS_NAMES, EVENT_TYPES } from '../../api/vocabulary';
import { DeliveryBadge } from '../../components/states';
import { Dialog, ErrorNote, formatTime } from '../../components/ui';
import { ReplayFailedSince } from './ReplayFailedSince';

const RANGES: Array<[string, string, number | null]> = [
  ['any', 'Any time', null],
  ['1h', 'Last hour', 3_600_000],
  ['24h', 'Last 24 hours', 86_400_000],
  ['7d', 'Last 7 days', 7 * 86_400_000],
];

interface DeliveryDetail extends Delivery {
  request: { headers: Record<string, string>; body: string | null; body_withheld?: string };
}

function DetailDialog({ accountId, endpointId, deliveryId, onClose }: { accountId: string; endpointId: string; deliveryId: string | null; onClose: () => void }) {
  const detail = useQuery({
    enabled: deliveryId !== null,
    queryKey: ['delivery', accountId, endpointId, deliveryId],
    queryFn: () =>
      unwrap(
        client.GET<DeliveryDetail>('/accounts/{accountId}/webhooks/{endpointId}/deliveries/{deliveryId}', {
          params: { path: { accountId, endpointId, deliveryId: deliveryId ?? '' } },
        }),
      ),
  });
  const d = detail.data;
  return (
    <Dialog title="Delivery" open={deliveryId !== null} onClose={onClose}>
      <ErrorNote error={detail.error} />
      {d && (
        <>
          <dl className="facts">
            <dt>Status</dt>
            <dd>
              <DeliveryBadge status={d.status} />
            </dd>
            <dt>Event</dt>
            <dd>
              {d.event_type} <code>{d.event_id}</code>
            </dd>
            <dt>Receiver’s answer</dt>
            <dd>
              {d.response_status ?? 'none'}
              {d.latency_ms !== null && ` in ${d.latency_ms} ms`}
              {d.error && ` (${d.error})`}
            </dd>
          </dl>
          <h3>Request headers</h3>
          <pre className="code">{Object.entries(d.request.headers).map(([k, v]) => `${k}: ${v}`).join('\n')}</pre>
          <h3>Request body, as sent</h3>
          {d.request.body === null
            ? <p>The body is not shown: it carries message text from a channel you cannot read.</p>
            : <pre className="code">{d.request.body}</pre>}
        </>
      )}
      <button type="button" onClick={onClose}>
        Done
      </button>
    </Dialog>
  );
}

export function DeliveryLog({ accountId, endpointId }: { accountId: string; endpointId: string }) {
  const [params, setParams] = useUrlParams();
  const qc = useQueryClient();
  const [detail, setDetail] = useState<string | null>(null);
  const [eventIdDraft, setEventIdDraft] = useState(params.get('event_id') ?? '');
  const statusParam = params.get('status') ?? '';
  const statuses = statusParam.split(',').filter(Boolean);
  // The boxes follow the click at once: the URL (the filter's truth) is updated by a router
  // navigation that may land a frame later, and a controlled box would flip back meanwhile.
  const [picked, setPicked] = useState<string[]>(statuses);
  useEffect(() => setPicked(statusParam.split(',').filter(Boolean)), [statusParam]);
  const eventType = params.get('event_type') ?? '';
  const range = params.get('range') ?? 'any';
  const eventId = params.get('event_id') ?? '';
  // Back and Forward change the URL: the search box follows it
  useEffect(() => setEventIdDraft(eventId), [eventId]);
  const rangeMs = RANGES.find((r) => r[0] === range)?.[2] ?? null;
  const query = { status: statuses.join(','), event_type: eventType, event_id: eventId, since: rangeMs ? new Date(Date.now() - rangeMs).toISOString() : undefined, limit: 50 };
  const log = useInfiniteQuery({
    queryKey: ['deliveries', accountId, endpointId, statuses.join(','), eventType, range, eventId],
    initialPageParam: '',
    queryFn: ({ pageParam }) =>
      unwrap(
        client.GET<Page<Delivery>>('/accounts/{accountId}/webhooks/{endpointId}/deliveries', {
          params: { path: { accountId, endpointId }, query: { ...query, cursor: pageParam || undefined } },
        }),
      ),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  const [replayed, setReplayed] = useState<string | null>(null);
  const replay = useMutation({
    mutationFn: (deliveryId: string) =>
      unwrap(
        client.POST<{ status: string; delivery_id?: string }>('/accounts/{accountId}/webhooks/{endpointId}/deliveries/{deliveryId}/replay', {
          params: { path: { accountId, endpointId, deliveryId } },
        }),
      ),
    onSuccess: (r) => {
      setReplayed(`Replayed: ${r.status}.`);
      void qc.invalidateQueries({ queryKey: ['deliveries', accountId, endpointId] });
      void qc.invalidateQueries({ queryKey: ['webhook', accountId, endpointId] });
    },
  });
  const rows = log.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <section aria-labelledby="log-title">
      <h2 id="log-title">Delivery log</h2>
      <div className="filters">
        <fieldset>
          <legend>Status</legend>
          {DELIVERY_STATUS_NAMES.map((s) => (
            <label key={s} className="check">
              <input
                type="checkbox"
                checked={picked.includes(s)}
                onChange={(e) => {
                  const next = e.target.checked ? [...picked, s] : picked.filter((x) => x !== s);
                  setPicked(next);
                  setParams({ status: next.join(',') });
                }}
              />
              {s}
            </label>
          ))}
        </fieldset>
        <label>
          Event type
          <select value={eventType} onChange={(e) => setParams({ event_type: e.target.value })}>
            <option value="">All event types</option>
            {EVENT_TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <label>
          Time range
          <select value={range} onChange={(e) => setParams({ range: e.target.value === 'any' ? '' : e.target.value })}>
            {RANGES.map(([v, label]) => (
              <option key={v} value={v}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <form
          role="search"
          onSubmit={(e) => {
            e.preventDefault();
            setParams({ event_id: eventIdDraft.trim() });
          }}
        >
          <label>
            Event id
            <input type="search" value={eventIdDraft} onChange={(e) => setEventIdDraft(e.target.value)} placeholder="evt_…" />
          </label>
          <button type="submit">Search</button>
        </form>
      </div>
      <ReplayFailedSince accountId={accountId} endpointId={endpointId} />
      <p role="status">{replayed}</p>
      <ErrorNote error={replay.error} />
      <ErrorNote error={log.error} />
      <table>
        <caption className="sr-only">Delivery attempts, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Status</th>
            <th scope="col">Event</th>
            <th scope="col">Attempt</th>
            <th scope="col">Time</th>
            <th scope="col">Latency</th>
            <th scope="col">Next retry</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((d) => (
            <tr key={d.id}>
              <td>
                <DeliveryBadge status={d.status} />
              </td>
              <td>
                {d.event_type}
                <div className="muted small">
                  <code>{d.event_id}</code>
                  {d.kind !== 'event' && ` · ${d.kind}`}
                </div>
              </td>
              <td>{d.attempt}</td>
              <td>{formatTime(d.attempted_at ?? d.created_at)}</td>
              <td>{d.latency_ms === null ? '—' : `${d.latency_ms} ms`}</td>
              <td>{formatTime(d.next_retry_at)}</td>
              <td className="row">
                <button type="button" onClick={() => setDetail(d.id)}>
                  Details
                </button>
                <button type="button" disabled={replay.isPending} onClick={() => replay.mutate(d.id)}>
                  Replay
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {log.isSuccess && rows.length === 0 && <p>No deliveries match. Events this endpoint subscribes to will appear here.</p>}
      {log.hasNextPage && (
        <button type="button" onClick={() => void log.fetchNextPage()} disabled={log.isFetchingNextPage}>
          Load more
        </button>
      )}
      <DetailDialog accountId={accountId} endpointId={endpointId} deliveryId={detail} onClose={() => setDetail(null)} />
    </section>
  );
}
