import { useState, type FormEvent } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { NavLink, useNavigate, useParams } from 'react-router';
import { client, unwrap } from '../../api/client';
import { useAccountId } from '../../api/hooks';
import type { Channel } from '../../api/types';
import { ErrorNote } from '../../components/ui';
import { useChannels } from '../webhooks/Webhooks';
import { MessagePane } from './MessagePane';

export function ChannelsPage() {
  const accountId = useAccountId();
  const { channelId, threadTs } = useParams();
  const qc = useQueryClient();
  const navigate = useNavigate();
  const channels = useChannels(accountId);
  const [name, setName] = useState('');
  const create = useMutation({
    mutationFn: () => unwrap(client.POST<Channel>('/accounts/{accountId}/channels', { params: { path: { accountId } }, body: { name } })),
    onSuccess: (c) => {
      setName('');
      void qc.invalidateQueries({ queryKey: ['channels', accountId] });
      void navigate(`/a/${accountId}/channels/${c.id}`);
    },
  });
  const list = (channels.data?.data ?? []).filter((c) => c.kind === 'channel');
  const current = list.find((c) => c.id === channelId);
  return (
    <>
      <h1>Channels</h1>
      <div className="split">
        <aside aria-label="Channel list">
          <ul className="side-list">
            {list.map((c) => (
              <li key={c.id}>
                <NavLink to={`/a/${accountId}/channels/${c.id}`}>#{c.name}</NavLink>
                {c.is_member === false && <span className="muted small"> (not a member)</span>}
              </li>
            ))}
          </ul>
          <form
            onSubmit={(e: FormEvent) => {
              e.preventDefault();
              create.mutate();
            }}
          >
            <label>
              New channel
              <input value={name} onChange={(e) => setName(e.target.value)} placeholder="general" required />
            </label>
            <button type="submit" disabled={create.isPending}>
              Create channel
            </button>
            <ErrorNote error={create.error} />
          </form>
        </aside>
        <div className="grow">
          <ErrorNote error={channels.error} />
          {!channelId && <p>Choose a channel on the left, or create one.</p>}
          {current && current.is_member === false && <p>You are not a member of #{current.name}; owners and admins can read its name but not its messages.</p>}
          {channelId && current?.is_member !== false && (
            <MessagePane
              key={channelId}
              accountId={accountId}
              channelId={channelId}
              title={current ? `#${current.name}` : 'Channel'}
              base={`/a/${accountId}/channels/${channelId}`}
              threadTs={threadTs}
            />
          )}
        </div>
      </div>
    </>
  );
}
