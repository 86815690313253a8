import { useEffect, useRef, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from 'react-router';
import { client, unwrap } from '../../api/client';
import { useAccountId } from '../../api/hooks';
import type { Endpoint, TestDelivery } from '../../api/types';
import { EndpointBadge, ENDPOINT_REASONS } from '../../components/states';
import { ConfirmButton, ErrorNote, formatTime, SecretDialog } from '../../components/ui';
import { DeliveryLog } from './DeliveryLog';
import { EndpointCharts } from './Charts';
import { useChannels } from './Webhooks';

/**
 * What the error adds to the answer's status: the delivery engine words a non-2xx answer as
 * "receiver answered 503" (or "gone (410)"), which the line already says; a transport error
 * (no answer: timeout, refused address) is shown whole.
 */
function errorDetail(result: TestDelivery): string | null {
  const { error, response_status: status } = result;
  if (!error) return null;
  if (status === null) return error;
  const rest = error.replace(`receiver answered ${status}`, '').replace(` (${status})`, '').trim();
  return rest || null;
}

function TestResult({ result }: { result: TestDelivery | null }) {
  if (!result) return null;
  const detail = errorDetail(result);
  return (
    <p role="status" className={result.status === 'delivered' ? 'ok-text' : 'error'}>
      Test event: {result.status}
      {result.response_status !== null && `, receiver answered ${result.response_status}`}
      {result.latency_ms !== null && ` in ${result.latency_ms} ms`}
      {detail && ` (${detail})`}.
    </p>
  );
}

/** Chosen channels by name (`#random`); one the viewer cannot see keeps its id. */
function ChannelNames({ accountId, ids }: { accountId: string; ids: string[] }) {
  const channels = useChannels(accountId);
  const names = new Map((channels.data?.data ?? []).map((c) => [c.id, c.name] as const));
  return (
    <>
      {ids.map((id, i) => {
        const name = names.get(id);
        return (
          <span key={id}>
            {i > 0 && ', '}
            {name ? `#${name}` : <code title="A channel you cannot see">{id}</code>}
          </span>
        );
      })}
    </>
  );
}

export function EndpointPage() {
  const accountId = useAccountId();
  const { endpointId = '' } = useParams();
  const qc = useQueryClient();
  const navigate = useNavigate();
  const [secret, setSecret] = useState<{ title: string; value: string; until?: string | null } | null>(null);
  const [testResult, setTestResult] = useState<TestDelivery | null>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  // After the secret dialog closes, focus goes back to the button that opened it; when that
  // button is gone ("Reveal secret" disappears once used), to the page's heading, never <body>.
  const hadSecret = useRef(false);
  useEffect(() => {
    if (secret) {
      hadSecret.current = true;
      return undefined;
    }
    if (!hadSecret.current) return undefined;
    hadSecret.current = false;
    const t = window.setTimeout(() => {
      const active = document.activeElement;
      if (!active || active === document.body || !active.isConnected) heading.current?.focus();
    }, 0);
    return () => window.clearTimeout(t);
  }, [secret]);
  const path = { accountId, endpointId };
  const key = ['webhook', accountId, endpointId];
  const endpoint = useQuery({
    queryKey: key,
    queryFn: () => unwrap(client.GET<Endpoint>('/accounts/{accountId}/webhooks/{endpointId}', { params: { path } })),
  });
  const refresh = () => {
    void qc.invalidateQueries({ queryKey: key });
    void qc.invalidateQueries({ queryKey: ['deliveries', accountId, endpointId] });
    void qc.invalidateQueries({ queryKey: ['webhooks', accountId] });
  };
  const action = useMutation({
    mutationFn: async (kind: 'test' | 'enable' | 'disable' | 'rotate' | 'reveal' | 'delete') => {
      switch (kind) {
        case 'test':
          return { kind, test: await unwrap(client.POST<TestDelivery>('/accounts/{accountId}/webhooks/{endpointId}/test', { params: { path } })) };
        case 'enable':
        case 'disable':
          return { kind, endpoint: await unwrap(client.PATCH<Endpoint>('/accounts/{accountId}/webhooks/{endpointId}', { params: { path }, body: { enabled: kind === 'enable' } })) };
        case 'rotate':
        case 'reveal':
          return { kind, endpoint: await unwrap(client.POST<Endpoint>(`/accounts/{accountId}/webhooks/{endpointId}/${kind}`, { params: { path } })) };
        case 'delete':
          await unwrap(client.DELETE('/accounts/{accountId}/webhooks/{endpointId}', { params: { path } }));
          return { kind };
      }
    },
    onSuccess: (out) => {
      if (out.kind === 'delete') {
        // Forget the endpoint's cached answers: Back to this page must ask the API again
        // (and show its 404), never draw the deleted endpoint from the cache.
        qc.removeQueries({ queryKey: key });
        qc.removeQueries({ queryKey: ['deliveries', accountId, endpointId] });
        qc.removeQueries({ queryKey: ['stats', accountId, endpointId] });
        void qc.invalidateQueries({ queryKey: ['webhooks', accountId] });
        void navigate(`/a/${accountId}/webhooks`);
        return;
      }
      if ('test' in out && out.test) setTestResult(out.test);
      if ('endpoint' in out && out.endpoint) {
        if (out.endpoint.test_delivery) setTestResult(out.endpoint.test_delivery);
        if (out.endpoint.secret) {
          setSecret({
            title: out.kind === 'rotate' ? 'New signing secret' : 'Signing secret',
            value: out.endpoint.secret,
            until: out.kind === 'rotate' ? out.endpoint.previous_valid_until : undefined,
          });
        }
      }
      refresh();
    },
  });
  // A failed fetch keeps the last data in the cache; never draw it beside the error.
  const e = endpoint.isError ? undefined : endpoint.data;
  return (
    <>
      <p>
        <Link to={`/a/${accountId}/webhooks`}>← All endpoints</Link>
      </p>
      <ErrorNote error={endpoint.error} />
      {e && (
        <>
          <h1 className="wrap" ref={heading} tabIndex={-1}>
            {e.url}
          </h1>
          <p>
            <EndpointBadge enabled={e.enabled} reason={e.disabled_reason} />{' '}
            {e.disabled_reason && <span>{ENDPOINT_REASONS[e.disabled_reason]}</span>}
          </p>
          <dl className="facts">
            <dt>Events</dt>
            <dd>{e.events.join(', ')}</dd>
            <dt>Channels</dt>
            <dd>{e.channels === 'all' ? 'All channels' : <ChannelNames accountId={accountId} ids={e.channels} />}</dd>
            <dt>Payload</dt>
            <dd>{e.payload}</dd>
            <dt>Authorization header</dt>
            <dd>{e.authorization_set ? 'set (never shown)' : 'not set'}</dd>
            <dt>Registered</dt>
            <dd>
              {formatTime(e.created_at)} through {e.created_via.replace('_', ' ')}
            </dd>
            {e.previous_valid_until && (
              <>
                <dt>Previous secret</dt>
                <dd>still signs until {formatTime(e.previous_valid_until)}</dd>
              </>
            )}
            {e.secret_pending_reveal && (
              <>
                <dt>Secret</dt>
                <dd>not yet revealed: use “Reveal secret” once to see it</dd>
              </>
            )}
          </dl>
          <div className="row actions">
            <button type="button" disabled={action.isPending} onClick={() => action.mutate('test')}>
              Send test event
            </button>
            {e.enabled ? (
              <button type="button" disabled={action.isPending} onClick={() => action.mutate('disable')}>
                Disable
              </button>
            ) : (
              <button type="button" disabled={action.isPending} onClick={() => action.mutate('enable')}>
                Enable
              </button>
            )}
            {/* Not disabled while an action runs: its dialog gives focus back to it when it closes. */}
            <ConfirmButton
              label="Rotate secret"
              question="Rotate the signing secret? The current one keeps signing alongside the new one for 24 hours."
              onConfirm={() => {
                if (!action.isPending) action.mutate('rotate');
              }}
            />
            {e.secret_pending_reveal && (
              <button type="button" disabled={action.isPending} onClick={() => action.mutate('reveal')}>
                Reveal secret
              </button>
            )}
            <ConfirmButton label="Delete" question="Delete this endpoint? Pending deliveries are dropped." onConfirm={() => action.mutate('delete')} />
          </div>
          {action.isPending && <p role="status">Working…</p>}
          <TestResult result={testResult} />
          <ErrorNote error={action.error} />
          <SecretDialog
            title={secret?.title ?? 'Signing secret'}
            secret={secret?.value ?? null}
            note={secret?.until ? <p>The previous secret keeps signing alongside this one until {formatTime(secret.until)}.</p> : undefined}
            onClose={() => setSecret(null)}
          />
          <EndpointCharts accountId={accountId} endpointId={endpointId} />
          <DeliveryLog accountId={accountId} endpointId={endpointId} />
        </>
      )}
    </>
  );
}
