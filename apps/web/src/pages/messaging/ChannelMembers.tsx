import { useId, useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { client, unwrap, type Page } from '../../api/client';
import { ErrorNote } from '../../components/ui';
import { useIdentities } from './viewer';

export interface ChannelMember {
  channel_id: string;
  identity_id: string;
  kind: 'person' | 'agent';
  name: string;
  added_at: string;
}

/** A channel's members (`GET /channels/{id}/members`): channel members and the account's owners and admins may read it. */
export function useChannelMembers(accountId: string, channelId: string) {
  return useQuery({
    queryKey: ['channel-members', accountId, channelId],
    queryFn: () =>
      unwrap(client.GET<Page<ChannelMember>>('/accounts/{accountId}/channels/{channelId}/members', { params: { path: { accountId, channelId }, query: { limit: 200 } } })),
  });
}

/** Adds an identity to a channel (`POST /channels/{id}/members`): any member of the channel, or an owner/admin. */
export function useAddMember(accountId: string, channelId: string, onAdded?: (m: ChannelMember) => void) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (identityId: string) =>
      unwrap(client.POST<ChannelMember>('/accounts/{accountId}/channels/{channelId}/members', { params: { path: { accountId, channelId } }, body: { identity_id: identityId } })),
    onSuccess: (m) => {
      void qc.invalidateQueries({ queryKey: ['channel-members', accountId, channelId] });
      void qc.invalidateQueries({ queryKey: ['channels', accountId] });
      void qc.invalidateQueries({ queryKey: ['channel', accountId, channelId] });
      onAdded?.(m);
    },
  });
}

/**
 * A channel's "Members" panel: who is in it, and "Add people" (a disclosure with a person or agent
 * of the account, "Add to channel"). Shown to whoever may read the channel's metadata, who may
 * also add (docs/api.md "Visibility and membership"); the API's refusal is shown if it says no.
 */
export function ChannelMembers({ accountId, channelId, channelName }: { accountId: string; channelId: string; channelName: string }) {
  const members = useChannelMembers(accountId, channelId);
  const identities = useIdentities(accountId);
  const [open, setOpen] = useState(false);
  const [choice, setChoice] = useState('');
  const [added, setAdded] = useState('');
  const formId = useId();
  const headingId = useId();
  const add = useAddMember(accountId, channelId, (m) => {
    setChoice('');
    setAdded(`Added ${m.name} to ${channelName}.`);
  });
  const list = members.data?.data ?? [];
  const inChannel = new Set(list.map((m) => m.identity_id));
  const candidates = (identities.data?.data ?? []).filter((i) => !inChannel.has(i.id));
  return (
    <section className="panel members-panel" aria-labelledby={headingId}>
      <h3 id={headingId}>Members</h3>
      <ErrorNote error={members.error} />
      <ul className="inline-list" aria-label="Channel members">
        {list.map((m) => (
          <li key={m.identity_id}>
            {m.name}
            {m.kind === 'agent' && <span className="muted small"> (agent)</span>}
          </li>
        ))}
      </ul>
      <button
        type="button"
        aria-expanded={open}
        aria-controls={formId}
        onClick={() => {
          setOpen((o) => !o);
          setAdded('');
        }}
      >
        Add people
      </button>
      <form
        id={formId}
        hidden={!open}
        aria-label="Add people"
        onSubmit={(e: FormEvent) => {
          e.preventDefault();
          if (choice) add.mutate(choice);
        }}
      >
        <div className="row">
          <label>
            Person or agent
            <select value={choice} onChange={(e) => setChoice(e.target.value)} required>
              <option value="">{candidates.length ? 'Choose someone…' : 'Everyone is already here'}</option>
              {candidates.map((i) => (
                <option key={i.id} value={i.id}>
                  {i.name} ({i.kind})
                </option>
              ))}
            </select>
          </label>
          <button type="submit" disabled={add.isPending || !choice}>
            Add to channel
          </button>
        </div>
        <ErrorNote error={add.error ?? identities.error} />
      </form>
      <p role="status" className="small">
        {added}
      </p>
    </section>
  );
}
