import { useState, type FormEvent } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Navigate, NavLink, useNavigate, useParams } from 'react-router';
import { client, unwrap } from '../../api/client';
import { useAccountId } from '../../api/hooks';
import type { Channel } from '../../api/types';
import { ErrorNote } from '../../components/ui';
import { useChannels } from '../webhooks/Webhooks';
import { ChannelMembers, useAddMember } from './ChannelMembers';
import { useChannelLookup } from './channel-lookup';
import { MessagePane } from './MessagePane';
import { useViewer } from './viewer';

function JoinChannel({ accountId, channel }: { accountId: string; channel: Channel }) {
  const { identityId } = useViewer(accountId);
  const join = useAddMember(accountId, channel.id);
  return (
    <div className="panel">
      <p>You are not a member of #{channel.name}; owners and admins can read its name and members but not its messages. Join it to read and write.</p>
      <button type="button" disabled={!identityId || join.isPending} onClick={() => identityId && join.mutate(identityId)}>
        Join channel
      </button>
      <ErrorNote error={join.error} />
    </div>
  );
}

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
      qc.setQueryData(['channel', accountId, c.id], { ...c, is_member: true });
      void qc.invalidateQueries({ queryKey: ['channels', accountId] });
      void navigate(`/a/${accountId}/channels/${c.id}`);
    },
  });
  const list = channels.data ? channels.data.data.filter((c) => c.kind === 'channel') : undefined;
  const lookup = useChannelLookup(accountId, channelId, list);
  const current = lookup.channel;
  if (current?.kind === 'dm') return <Navigate replace to={`/a/${accountId}/dms/${current.id}`} />;
  return (
    <>
      <h1>Channels</h1>
      <div className="split">
        <aside aria-label="Channel list">
          <ul className="side-list">
            {(list ?? []).map((c) => (
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
          <ErrorNote error={channels.error ?? lookup.error} />
          {!channelId && (
            <>
              <p>Choose a channel on the left, or create one.</p>
              <p className="muted">You see the channels you are a member of. To join another, ask one of its members to add you (its Members panel, "Add people").</p>
            </>
          )}
          {channelId && lookup.notFound && (
            <section className="empty" aria-labelledby="channel-missing">
              <h2 id="channel-missing">Channel not found</h2>
              <p>The channel was not found. It may never have existed here; choose one on the left.</p>
            </section>
          )}
          {channelId && lookup.notMember && (
            <section className="empty" aria-labelledby="channel-closed">
              <h2 id="channel-closed">Not a member of this channel</h2>
              <p>You are not a member of this channel. Ask one of its members to add you.</p>
            </section>
          )}
          {current && current.is_member === false && (
            <>
              <h2>#{current.name}</h2>
              <JoinChannel accountId={accountId} channel={current} />
              <ChannelMembers key={current.id} accountId={accountId} channelId={current.id} channelName={`#${current.name}`} />
            </>
          )}
          {current && current.is_member !== false && (
            <MessagePane
              key={current.id}
              accountId={accountId}
              channelId={current.id}
              title={`#${current.name}`}
              base={`/a/${accountId}/channels/${current.id}`}
              threadTs={threadTs}
              header={<ChannelMembers accountId={accountId} channelId={current.id} channelName={`#${current.name}`} />}
            />
          )}
        </div>
      </div>
    </>
  );
}
