import { useInfiniteQuery } from '@tanstack/react-query';
import { useUrlParams } from '../components/url-params';
import { client, unwrap, type Page } from '../api/client';
import { useAccountId } from '../api/hooks';
import { ErrorNote, formatTime } from '../components/ui';
import { useChannels } from './webhooks/Webhooks';
import { useIdentityNames } from './messaging/viewer';
import { useMembers } from './Members';

interface AuditEntry {
  id: string;
  action: string;
  actor: { user_id: string | null; identity_id: string | null; credential_id: string | null; via: string };
  target: { type: string; id: string } | null;
  redacted?: boolean;
  created_at: string;
}

export function AuditPage() {
  const accountId = useAccountId();
  const [params, setParams] = useUrlParams();
  const action = params.get('action') ?? '';
  const actor = params.get('actor') ?? '';
  const since = params.get('since') ?? '';
  const log = useInfiniteQuery({
    queryKey: ['audit', accountId],
    initialPageParam: '',
    queryFn: ({ pageParam }) =>
      unwrap(client.GET<Page<AuditEntry>>('/accounts/{accountId}/audit', { params: { path: { accountId }, query: { limit: 200, cursor: pageParam || undefined } } })),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  // Names for ids, from three lists the app reads anyway (one call each, none per row); an id stays when unknown.
  const emails = new Map((useMembers(accountId).data?.data ?? []).map((m) => [m.user_id, m.email]));
  const identityNames = useIdentityNames(accountId);
  const channelNames = new Map((useChannels(accountId).data?.data ?? []).filter((c) => c.kind === 'channel').map((c) => [c.id, `#${c.name}`]));
  const actorName = (a: AuditEntry['actor']) => (a.user_id && emails.get(a.user_id)) ?? (a.identity_id && identityNames.get(a.identity_id)) ?? a.user_id ?? a.identity_id ?? '';
  const targetName = (t: NonNullable<AuditEntry['target']>): string => {
    if (t.type === 'user') return emails.get(t.id) ?? t.id;
    if (t.type === 'identity') return identityNames.get(t.id) ?? t.id;
    if (t.type === 'channel') return channelNames.get(t.id) ?? t.id;
    if (t.type === 'message') {
      const [ch, ts] = t.id.split('/');
      return ch && channelNames.has(ch) ? `${channelNames.get(ch)} ${ts ?? ''}` : t.id;
    }
    return t.id;
  };
  // Filters apply to the pages loaded so far ("Load more" reaches further back).
  const rows = (log.data?.pages.flatMap((p) => p.data) ?? []).filter(
    (r) =>
      (!action || r.action.includes(action)) &&
      (!actor || [r.actor.user_id, r.actor.identity_id, r.actor.credential_id, r.actor.via, actorName(r.actor)].some((v) => v?.includes(actor))) &&
      (!since || r.created_at >= new Date(since).toISOString()),
  );
  return (
    <>
      <h1>Audit log</h1>
      <div className="filters">
        <label>
          Action
          <input value={action} onChange={(e) => setParams({ action: e.target.value }, { typing: true })} placeholder="api_key.created" />
        </label>
        <label>
          Actor
          <input value={actor} onChange={(e) => setParams({ actor: e.target.value }, { typing: true })} placeholder="email, usr_… or web_session" />
        </label>
        <label>
          Since
          <input type="date" value={since} onChange={(e) => setParams({ since: e.target.value })} />
        </label>
      </div>
      <ErrorNote error={log.error} />
      <table>
        <caption className="sr-only">Audit entries, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Action</th>
            <th scope="col">Actor</th>
            <th scope="col">Target</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.id}>
              <td>{formatTime(r.created_at)}</td>
              <td>
                <code>{r.action}</code>
              </td>
              <td>
                {r.actor.via} <span className="small">{actorName(r.actor)}</span>
              </td>
              <td>{r.redacted ? 'hidden (a channel you cannot read)' : r.target ? (
                  <>
                    {r.target.type} <span title={r.target.id}>{targetName(r.target)}</span>
                  </>
                ) : (
                  '—'
                )}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {log.hasNextPage && (
        <button type="button" onClick={() => void log.fetchNextPage()}>
          Load more
        </button>
      )}
    </>
  );
}
