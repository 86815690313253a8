import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { NavLink, useNavigate, useParams } from 'react-router';
import { client, unwrap, type Page } from '../../api/client';
import { useAccountId } from '../../api/hooks';
import type { Channel } from '../../api/types';
import { ErrorNote } from '../../components/ui';
import { MessagePane } from './MessagePane';

interface Identity {
  id: string;
  kind: string;
  name: string;
}

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
  const identities = useQuery({
    queryKey: ['identities', accountId],
    queryFn: () => unwrap(client.GET<Page<Identity>>('/accounts/{accountId}/identities', { params: { path: { accountId }, query: { limit: 200 } } })),
  });
  const names = new Map((identities.data?.data ?? []).map((i) => [i.id, i.name]));
  const open = useMutation({
    mutationFn: () => unwrap(client.POST<Channel>('/accounts/{accountId}/dms', { params: { path: { accountId } }, body: { members: [with_] } })),
    onSuccess: (c) => {
      void qc.invalidateQueries({ queryKey: ['dms', accountId] });
      void navigate(`/a/${accountId}/dms/${c.id}`);
    },
  });
  const label = (c: Channel) => (c.members ?? []).map((m) => names.get(m) ?? m).join(', ');
  const current = dms.data?.data.find((c) => c.id === channelId);
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
                {(identities.data?.data ?? []).map((i) => (
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
          <ErrorNote error={dms.error} />
          {!channelId && <p>Choose a conversation, or open a new one with someone.</p>}
          {channelId && (
            <MessagePane key={channelId} accountId={accountId} channelId={channelId} title={current ? label(current) : 'Direct message'} base={`/a/${accountId}/dms/${channelId}`} threadTs={threadTs} />
          )}
        </div>
      </div>
    </>
  );
}
