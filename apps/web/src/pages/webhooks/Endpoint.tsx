import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from 'react-router';
import { client, unwrap } from '../../api/client';
import { useAccountId } from '../../api/hooks';
import type { Endpoint, TestDelivery } from '../../api/types';
import { EndpointBadge, ENDPOINT_REASONS } from '../../components/states';
import { ConfirmButton, ErrorNote, formatTime, SecretDialog } from '../../components/ui';
import { DeliveryLog } from './DeliveryLog';
import { EndpointCharts } from './Charts';

function TestResult({ result }: { result: TestDelivery | null }) {
  if (!result) return null;
  return (
    <p role="status" className={result.status === 'delivered' ? 'ok-text' : 'error'}>
      Test event: {result.status}
      {result.response_status !== null && `, receiver answered ${result.response_status}`}
      {result.latency_ms !== null && ` in ${result.latency_ms} ms`}
      {result.error && ` (${result.error})`}.
    </p>
  );
}

export function EndpointPage() {
  const accountId = useAccountId();
  const { endpointId = '' } = useParams();
  const qc = useQueryClient();
  const navigate = useNavigate();
  const [secret, setSecret] = useState<{ title: string; value: string; until?: string | null } | null>(null);
  const [testResult, setTestResult] = useState<TestDelivery | null>(null);
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
  const e = endpoint.data;
  return (
    <>
      <p>
        <Link to={`/a/${accountId}/webhooks`}>← All endpoints</Link>
      </p>
      <ErrorNote error={endpoint.error} />
      {e && (
        <>
          <h1 className="wrap">{e.url}</h1>
          <p>
            <EndpointBadge enabled={e.enabled} reason={e.disabled_reason} />{' '}
            {e.disabled_reason && <span>{ENDPOINT_REASONS[e.disabled_reason]}</span>}
          </p>
          <dl className="facts">
            <dt>Events</dt>
            <dd>{e.events.join(', ')}</dd>
            <dt>Channels</dt>
            <dd>{e.channels === 'all' ? 'All channels' : e.channels.join(', ')}</dd>
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
            <button type="button" disabled={action.isPending} onClick={() => action.mutate('rotate')}>
              Rotate secret
            </button>
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
