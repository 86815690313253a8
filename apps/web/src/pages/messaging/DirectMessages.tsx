import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { NavLink, useNavigate, useParams } from 'react-router';
import { client, unwrap, type Page } from '../../api/client';
import { useAccountId } from '../../api/hooks';
import type { Channel } from '../../api/types';
import { ErrorNote } from '../../components/ui';
import { useChannelLookup } from './channel-lookup';
import { MessagePane } from './MessagePane';
import { useIdentities, useIdentityNames, useViewer } from './viewer';

export function DirectMessagesPage() {
  const accountId = useAccountId();
  const { channelId, threadTs } = useParams();
  const qc = useQueryClient();
  const navigate = useNavigate();
  const [with_, setWith] = useState('');
  const dms = useQuery({
    queryKey: ['dms', accountId],
    queryFn: () => unwrap(client.GET<Page<Channel>>('/accounts/{accountId}/dms', { params: { path: { accountId }, query: { limit: 200 } } })),
  });
  const identities = useIdentities(accountId);
  const viewer = useViewer(accountId);
  // the API opens a DM with others (1..8); the person themselves is never a choice
  const others = (identities.data?.data ?? []).filter((i) => i.id !== viewer.identityId);
  const names = useIdentityNames(accountId);
  const open = useMutation({
    mutationFn: () => unwrap(client.POST<Channel>('/accounts/{accountId}/dms', { params: { path: { accountId } }, body: { members: [with_] } })),
    onSuccess: (c) => {
      qc.setQueryData(['channel', accountId, c.id], c);
      void qc.invalidateQueries({ queryKey: ['dms', accountId] });
      void navigate(`/a/${accountId}/dms/${c.id}`);
    },
  });
  // a DM is named by the others in it (all of them when it is the person alone)
  const label = (c: Channel) => {
    const ids = c.members ?? [];
    const shown = ids.filter((m) => m !== viewer.identityId);
    return (shown.length ? shown : ids).map((m) => names.get(m) ?? m).join(', ');
  };
  const lookup = useChannelLookup(accountId, channelId, dms.data?.data);
  const current = lookup.channel?.kind === 'dm' ? lookup.channel : undefined;
  const missing = Boolean(channelId) && (lookup.notFound || lookup.notMember || lookup.channel?.kind === 'channel');
  return (
    <>
      <h1>Direct messages</h1>
      <div className="split">
        <aside aria-label="Direct message list">
          <ul className="side-list">
            {(dms.data?.data ?? []).map((c) => (
              <li key={c.id}>
                <NavLink to={`/a/${accountId}/dms/${c.id}`}>{label(c)}</NavLink>
              </li>
            ))}
          </ul>
          <form
            onSubmit={(e: FormEvent) => {
              e.preventDefault();
              if (with_) open.mutate();
            }}
          >
            <label>
              With
              <select value={with_} onChange={(e) => setWith(e.target.value)}>
                <option value="">Choose someone…</option>
                {others.map((i) => (
                  <option key={i.id} value={i.id}>
                    {i.name} ({i.kind})
                  </option>
                ))}
              </select>
            </label>
            <button type="submit" disabled={open.isPending}>
              Open DM
            </button>
            <ErrorNote error={open.error ?? identities.error} />
          </form>
        </aside>
        <div className="grow">
          <ErrorNote error={dms.error ?? lookup.error} />
          {!channelId && <p>Choose a conversation, or open a new one with someone.</p>}
          {missing && (
            <section className="empty" aria-labelledby="dm-missing">
              <h2 id="dm-missing">Conversation not found</h2>
              <p>This direct message was not found, or you are not in it.</p>
            </section>
          )}
          {current && (
            <MessagePane key={current.id} accountId={accountId} channelId={current.id} title={label(current)} base={`/a/${accountId}/dms/${current.id}`} threadTs={threadTs} />
          )}
        </div>
      </div>
    </>
  );
}
