import { useState } from 'react';
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from 'react-router';
import { client, unwrap, type Page } from '../../api/client';
import { useAccountId } from '../../api/hooks';
import type { Mirror, MirrorDelivery } from '../../api/types';
import { DeliveryBadge, MirrorBadge, MIRROR_REASONS } from '../../components/states';
import { ConfirmButton, ErrorNote, formatTime } from '../../components/ui';
import { useMembers } from '../Members';
import { useChannels } from '../webhooks/Webhooks';
import { MirrorForm } from './MirrorForm';
import { formatName, rate, waitsForReceiver, healthOf } from './health';

function TestResult({ result }: { result: MirrorDelivery | null }) {
  if (!result) return null;
  return (
    <p role="status" className={result.status === 'delivered' ? 'ok-text' : 'error'}>
      Test send: {result.status}
      {result.response_status !== null && `, receiver answered ${result.response_status}`}
      {result.latency_ms !== null && ` in ${result.latency_ms} ms`}
      {result.error && ` (${result.error})`}.
    </p>
  );
}

/** The mirror's sends, newest first (no message text: docs/mirrors.md "The delivery log"). */
function MirrorLog({ accountId, mirrorId }: { accountId: string; mirrorId: string }) {
  const log = useInfiniteQuery({
    queryKey: ['mirror-deliveries', accountId, mirrorId],
    initialPageParam: '',
    queryFn: ({ pageParam }) =>
      unwrap(
        client.GET<Page<MirrorDelivery>>('/accounts/{accountId}/mirrors/{mirrorId}/deliveries', {
          params: { path: { accountId, mirrorId }, query: { limit: 50, cursor: pageParam || undefined } },
        }),
      ),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
    refetchInterval: 5_000,
  });
  const rows = log.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <section aria-labelledby="mirror-log-title">
      <h2 id="mirror-log-title">Delivery log</h2>
      <ErrorNote error={log.error} />
      {log.isSuccess && rows.length === 0 && <p>Nothing sent yet. Messages posted in its channels from now on, and tests, appear here.</p>}
      {rows.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">Status</th>
              <th scope="col">Kind</th>
              <th scope="col">Messages</th>
              <th scope="col">Attempt</th>
              <th scope="col">Time</th>
              <th scope="col">Answer</th>
              <th scope="col">Latency</th>
              <th scope="col">Next retry</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((d) => (
              <tr key={d.id}>
                <td>
                  <DeliveryBadge status={d.status} />
                </td>
                <td>{d.kind === 'test' ? 'test' : 'messages'}</td>
                <td>{d.line_count}</td>
                <td>{d.attempt}</td>
                <td>{formatTime(d.attempted_at ?? d.created_at)}</td>
                <td>
                  {d.response_status ?? '—'}
                  {d.error && <div className="muted small">{d.error}</div>}
                </td>
                <td>{d.latency_ms === null ? '—' : `${d.latency_ms} ms`}</td>
                <td>{d.status === 'retrying' ? formatTime(d.next_retry_at) : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {log.hasNextPage && (
        <button type="button" onClick={() => void log.fetchNextPage()} disabled={log.isFetchingNextPage}>
          Load older sends
        </button>
      )}
    </section>
  );
}

/** One mirror: its facts and state, "Send test", "Edit", "Enable"/"Disable", "Delete", the log. */
export function MirrorPage() {
  const accountId = useAccountId();
  const { mirrorId = '' } = useParams();
  const qc = useQueryClient();
  const navigate = useNavigate();
  const [editing, setEditing] = useState(false);
  const [testResult, setTestResult] = useState<MirrorDelivery | null>(null);
  const channels = useChannels(accountId);
  const members = useMembers(accountId);
  const emailOf = (userId: string) => members.data?.data.find((p) => p.user_id === userId)?.email ?? userId;
  const names = new Map((channels.data?.data ?? []).map((c) => [c.id, `#${c.name}`]));
  const path = { accountId, mirrorId };
  const key = ['mirror', accountId, mirrorId];
  const mirror = useQuery({ queryKey: key, queryFn: () => unwrap(client.GET<Mirror>('/accounts/{accountId}/mirrors/{mirrorId}', { params: { path } })) });
  const refresh = () => {
    void qc.invalidateQueries({ queryKey: key });
    void qc.invalidateQueries({ queryKey: ['mirrors', accountId] });
    void qc.invalidateQueries({ queryKey: ['mirror-deliveries', accountId, mirrorId] });
  };
  const action = useMutation({
    mutationFn: async (kind: 'test' | 'enable' | 'disable' | 'delete') => {
      if (kind === 'test') return { kind, test: await unwrap(client.POST<MirrorDelivery>('/accounts/{accountId}/mirrors/{mirrorId}/test', { params: { path } })) };
      if (kind === 'delete') {
        await unwrap(client.DELETE('/accounts/{accountId}/mirrors/{mirrorId}', { params: { path } }));
        return { kind };
      }
      await unwrap(client.PATCH<Mirror>('/accounts/{accountId}/mirrors/{mirrorId}', { params: { path }, body: { enabled: kind === 'enable' } }));
      return { kind };
    },
    onSuccess: (out) => {
      if (out.kind === 'delete') {
        void qc.invalidateQueries({ queryKey: ['mirrors', accountId] });
        void navigate(`/a/${accountId}/mirrors`);
        return;
      }
      if ('test' in out && out.test) setTestResult(out.test);
      refresh();
    },
  });
  const m = mirror.data;
  return (
    <>
      <p>
        <Link to={`/a/${accountId}/mirrors`}>← All mirrors</Link>
      </p>
      <ErrorNote error={mirror.error} />
      {m && (
        <>
          <h1 className="wrap">{m.url}</h1>
          <p>
            <MirrorBadge enabled={m.enabled} reason={m.disabled_reason} /> {m.disabled_reason && <span>{MIRROR_REASONS[m.disabled_reason]}</span>}
          </p>
          {editing ? (
            <MirrorForm
              accountId={accountId}
              mirror={m}
              onCancel={() => setEditing(false)}
              onSaved={(saved) => {
                qc.setQueryData(key, saved);
                setEditing(false);
                refresh();
              }}
            />
          ) : (
            <dl className="facts">
              <dt>Format</dt>
              <dd>{formatName(m.format)}</dd>
              <dt>Channels</dt>
              <dd>{m.channels.map((id) => names.get(id) ?? id).join(', ')}</dd>
              <dt>Set up by</dt>
              <dd>
                {emailOf(m.created_by)} on {formatTime(m.created_at)} (sends are charged to their seat)
              </dd>
              <dt>Last success</dt>
              <dd>{formatTime(healthOf(m).last_success_at)}</dd>
              <dt>Last failure</dt>
              <dd>{formatTime(healthOf(m).last_failure_at)}</dd>
              <dt>Success 24 h</dt>
              <dd>{rate(healthOf(m))}</dd>
              <dt>Pending</dt>
              <dd>{healthOf(m).pending_count}</dd>
              {waitsForReceiver(healthOf(m).paused_until) && (
                <>
                  <dt>Paused until</dt>
                  <dd>{formatTime(healthOf(m).paused_until)}: the receiver asked to wait (429), nothing is sent before</dd>
                </>
              )}
            </dl>
          )}
          <div className="row actions">
            <button type="button" disabled={action.isPending} onClick={() => action.mutate('test')}>
              Send test
            </button>
            {!editing && (
              <button type="button" onClick={() => setEditing(true)}>
                Edit
              </button>
            )}
            {m.enabled ? (
              <button type="button" disabled={action.isPending} onClick={() => action.mutate('disable')}>
                Disable
              </button>
            ) : (
              <button type="button" disabled={action.isPending} onClick={() => action.mutate('enable')}>
                Enable
              </button>
            )}
            <ConfirmButton label="Delete" question="Delete this mirror? Messages waiting to be sent are dropped." onConfirm={() => action.mutate('delete')} />
          </div>
          {action.isPending && <p role="status">Working…</p>}
          <TestResult result={testResult} />
          <ErrorNote error={action.error} />
          <MirrorLog accountId={accountId} mirrorId={mirrorId} />
        </>
      )}
    </>
  );
}
