import { useState } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { client, unwrap, type Page } from '../../api/client';
import { useAccountId } from '../../api/hooks';
import type { Mirror } from '../../api/types';
import { MirrorBadge, MIRROR_REASONS } from '../../components/states';
import { ErrorNote, formatTime } from '../../components/ui';
import { useChannels } from '../webhooks/Webhooks';
import { MirrorForm } from './MirrorForm';
import { formatName, rate, waitsForReceiver, healthOf } from './health';

/** Mirrors (owners and admins): each mirror with its state and health; "Add mirror". */
export function MirrorsPage() {
  const accountId = useAccountId();
  const qc = useQueryClient();
  const [adding, setAdding] = useState(false);
  const channels = useChannels(accountId);
  const names = new Map((channels.data?.data ?? []).map((c) => [c.id, `#${c.name}`]));
  const list = useQuery({
    queryKey: ['mirrors', accountId],
    queryFn: () => unwrap(client.GET<Page<Mirror>>('/accounts/{accountId}/mirrors', { params: { path: { accountId }, query: { limit: 100 } } })),
  });
  return (
    <>
      <h1>Mirrors</h1>
      <p className="muted">
        A mirror posts the messages of chosen channels, as text, into another chat tool’s incoming webhook (Slack, Mattermost, Rocket.Chat, Discord,
        Google Chat, Teams). One-way and unsigned: nothing comes back in. Edits and deletes are not mirrored.
      </p>
      <button type="button" aria-expanded={adding} onClick={() => setAdding(!adding)}>
        Add mirror
      </button>
      {adding && (
        <MirrorForm
          accountId={accountId}
          onCancel={() => setAdding(false)}
          onSaved={() => {
            setAdding(false);
            void qc.invalidateQueries({ queryKey: ['mirrors', accountId] });
          }}
        />
      )}
      <ErrorNote error={list.error} />
      {list.data && list.data.data.length === 0 && <p>No mirrors yet. Use “Add mirror” with the other tool’s incoming-webhook URL.</p>}
      {list.data && list.data.data.length > 0 && (
        <table>
          <caption className="sr-only">Mirrors and their health</caption>
          <thead>
            <tr>
              <th scope="col">Mirror</th>
              <th scope="col">Format</th>
              <th scope="col">Channels</th>
              <th scope="col">State</th>
              <th scope="col">Last success</th>
              <th scope="col">Last failure</th>
              <th scope="col">Success 24 h</th>
              <th scope="col">Pending</th>
            </tr>
          </thead>
          <tbody>
            {list.data.data.map((m) => (
              <tr key={m.id}>
                <td className="wrap">
                  <Link to={`/a/${accountId}/mirrors/${m.id}`}>{m.url}</Link>
                </td>
                <td>{formatName(m.format)}</td>
                <td>{m.channels.map((id) => names.get(id) ?? id).join(', ')}</td>
                <td>
                  <MirrorBadge enabled={m.enabled} reason={m.disabled_reason} />
                  {m.disabled_reason && <div className="muted small">{MIRROR_REASONS[m.disabled_reason]}</div>}
                  {waitsForReceiver(healthOf(m).paused_until) && <div className="muted small">Paused until {formatTime(healthOf(m).paused_until)} (the receiver asked to wait).</div>}
                </td>
                <td>{formatTime(healthOf(m).last_success_at)}</td>
                <td>{formatTime(healthOf(m).last_failure_at)}</td>
                <td>{rate(healthOf(m))}</td>
                <td>{healthOf(m).pending_count}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
