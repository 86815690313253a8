import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useParams } from 'react-router';
import { client, unwrap } from '../api/client';
import { useAccountId } from '../api/hooks';
import { ErrorNote, formatTime } from '../components/ui';

interface Approval {
  id: string;
  action: string;
  status: string;
  summary: string;
  target: { channel_name: string | null; channel_kind: string | null; ts: string; exists: boolean; text_preview: string | null; can_read_channel: boolean };
  requested_by: { email: string | null; identity_kind: string | null; identity_name: string | null };
  /** The API's answer to "may this person approve or deny it?" (the rule of docs/api.md "Deletion and approvals"). */
  you_may_decide: boolean;
  created_at?: string;
  expires_at?: string;
}

/** Why this person may not decide, in words (the API says only that they may not). */
function whyNot(a: Approval): string {
  if (!a.target.can_read_channel) {
    return 'You cannot approve or deny this: only a member of its channel may decide, and you are not one.';
  }
  return 'You cannot approve or deny this: it is for the person who wrote the message, an owner or admin in its channel, or the person who approved the agent that asked.';
}

/** One approval; its heading is `level` (2 for the linked one, under the page's h1; 3 under "Waiting for you"). */
function ApprovalCard({ accountId, approvalId, level }: { accountId: string; approvalId: string; level: 2 | 3 }) {
  const Heading = level === 2 ? 'h2' : 'h3';
  const qc = useQueryClient();
  const key = ['approval', accountId, approvalId];
  const approval = useQuery({
    queryKey: key,
    queryFn: () => unwrap(client.GET<Approval>('/accounts/{accountId}/approvals/{approvalId}', { params: { path: { accountId, approvalId } } })),
  });
  const decide = useMutation({
    mutationFn: (d: 'approve' | 'deny') =>
      unwrap(client.POST<{ status: string; job_id: string | null }>(`/accounts/{accountId}/approvals/{approvalId}/${d}`, { params: { path: { accountId, approvalId } } })),
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: key });
      void qc.invalidateQueries({ queryKey: ['approvals', accountId] });
    },
  });
  const a = approval.data;
  return (
    <article className="panel" aria-labelledby={`apr-${approvalId}`}>
      <ErrorNote error={approval.error} />
      {a && (
        <>
          <Heading id={`apr-${approvalId}`}>{a.summary}</Heading>
          <dl className="facts">
            <dt>Status</dt>
            <dd>
              <span className="badge">{a.status}</span>
            </dd>
            <dt>Requested by</dt>
            <dd>
              {a.requested_by.identity_name ?? a.requested_by.email ?? 'unknown'} ({a.requested_by.identity_kind ?? 'identity'})
              {a.requested_by.email && a.requested_by.identity_kind === 'agent' && `, approved by ${a.requested_by.email}`}
            </dd>
            <dt>Channel</dt>
            <dd>{a.target.channel_kind === 'dm' ? 'a direct message' : a.target.channel_name ? `#${a.target.channel_name}` : 'a channel you cannot see'}</dd>
            <dt>Message</dt>
            <dd>{!a.target.exists ? 'already gone' : a.target.text_preview ?? 'not shown: you are not a member of this channel'}</dd>
            {a.expires_at && (
              <>
                <dt>Expires</dt>
                <dd>{formatTime(a.expires_at)}</dd>
              </>
            )}
          </dl>
          {a.status === 'pending' && !a.you_may_decide && <p className="muted">{whyNot(a)}</p>}
          {a.status === 'pending' && a.you_may_decide && (
            <div className="row">
              <button type="button" onClick={() => decide.mutate('approve')} disabled={decide.isPending}>
                Approve
              </button>
              <button type="button" onClick={() => decide.mutate('deny')} disabled={decide.isPending}>
                Deny
              </button>
            </div>
          )}
          {decide.data && (
            <p role="status">
              {decide.data.status === 'approved' ? 'Approved: the step runs in the background.' : `Decision recorded: ${decide.data.status}.`}
            </p>
          )}
          <ErrorNote error={decide.error} />
        </>
      )}
    </article>
  );
}

export function ApprovalsPage() {
  const accountId = useAccountId();
  const { approvalId } = useParams();
  const navigate = useNavigate();
  const [id, setId] = useState('');
  const pending = useQuery({
    queryKey: ['approvals', accountId],
    queryFn: () => unwrap(client.GET<{ data: Array<{ id: string }> }>('/accounts/{accountId}/approvals', { params: { path: { accountId } } })),
  });
  const others = (pending.data?.data ?? []).filter((p) => p.id !== approvalId);
  return (
    <>
      <h1>Approvals</h1>
      <p className="muted">
        A destructive step asked for by an API key or agent waits here for a person. The credential receives a link to this page; follow it, or paste the
        approval id.
      </p>
      <form
        className="row"
        onSubmit={(e: FormEvent) => {
          e.preventDefault();
          if (id.trim()) void navigate(`/a/${accountId}/approvals/${encodeURIComponent(id.trim())}`);
        }}
      >
        <label>
          Approval id
          <input value={id} onChange={(e) => setId(e.target.value)} placeholder="apr_…" />
        </label>
        <button type="submit">Open</button>
      </form>
      {approvalId && <ApprovalCard accountId={accountId} approvalId={approvalId} level={2} />}
      <h2>Waiting for you</h2>
      <ErrorNote error={pending.error} />
      {pending.isSuccess && others.length === 0 && <p>Nothing else is waiting for your decision.</p>}
      {others.map((p) => (
        <ApprovalCard key={p.id} accountId={accountId} approvalId={p.id} level={3} />
      ))}
    </>
  );
}
