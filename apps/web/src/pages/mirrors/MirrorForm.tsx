import { useState, type FormEvent } from 'react';
import { useMutation } from '@tanstack/react-query';
import { client, unwrap } from '../../api/client';
import type { Mirror } from '../../api/types';
import { ErrorNote } from '../../components/ui';
import { useChannels } from '../webhooks/Webhooks';

/** The four formats a mirror can post in (docs/mirrors.md "Formats"), with the tools that take each. */
export const MIRROR_FORMATS: Array<[Mirror['format'], string]> = [
  ['slack', 'Slack (also Mattermost, Rocket.Chat)'],
  ['discord', 'Discord'],
  ['google_chat', 'Google Chat'],
  ['teams', 'Microsoft Teams (Workflows)'],
];

/**
 * Create or edit a mirror: "URL", "Channels" (one checkbox per channel the person is in; never
 * DMs), "Format", "Enabled"; submitted by "Create mirror" or "Save mirror". The API checks each
 * rule and its message is shown here.
 */
export function MirrorForm({ accountId, mirror, onSaved, onCancel }: { accountId: string; mirror?: Mirror; onSaved: (m: Mirror) => void; onCancel?: () => void }) {
  const channels = useChannels(accountId);
  const [url, setUrl] = useState(mirror?.url ?? '');
  const [chosen, setChosen] = useState<string[]>(mirror?.channels ?? []);
  const [format, setFormat] = useState<Mirror['format']>(mirror?.format ?? 'slack');
  const [enabled, setEnabled] = useState(mirror?.enabled ?? true);
  // the form's own check, in plain words, before anything is sent; cleared when a box changes
  const [channelsError, setChannelsError] = useState<string | null>(null);
  const save = useMutation({
    mutationFn: () => {
      if (!mirror) {
        return unwrap(client.POST<Mirror>('/accounts/{accountId}/mirrors', { params: { path: { accountId } }, body: { url, channels: chosen, format, enabled } }));
      }
      // Only what changed: changing the URL makes the person saving it the mirror's creator (docs/mirrors.md).
      const body: Record<string, unknown> = {};
      if (url !== mirror.url) body.url = url;
      if (chosen.join() !== mirror.channels.join()) body.channels = chosen;
      if (format !== mirror.format) body.format = format;
      if (enabled !== mirror.enabled) body.enabled = enabled;
      if (Object.keys(body).length === 0) return Promise.resolve(mirror);
      return unwrap(client.PATCH<Mirror>('/accounts/{accountId}/mirrors/{mirrorId}', { params: { path: { accountId, mirrorId: mirror.id } }, body }));
    },
    onSuccess: onSaved,
  });
  const mine = (channels.data?.data ?? []).filter((c) => c.kind === 'channel' && (c.is_member !== false || chosen.includes(c.id)));
  const toggle = (id: string, on: boolean) => {
    setChosen((list) => (on ? [...list, id] : list.filter((x) => x !== id)));
    setChannelsError(null);
  };
  return (
    <form
      className="panel"
      aria-label={mirror ? 'Edit mirror' : 'Add mirror'}
      onSubmit={(e: FormEvent) => {
        e.preventDefault();
        if (chosen.length === 0) {
          setChannelsError('Choose at least one channel to mirror.');
          save.reset();
          e.currentTarget.querySelector<HTMLInputElement>('.mirror-channels input')?.focus();
          return;
        }
        save.mutate();
      }}
    >
      <label>
        URL
        <input type="url" required value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://hooks.slack.com/services/…" aria-describedby="mirror-url-help" />
      </label>
      <p id="mirror-url-help" className="muted small">
        The other tool’s incoming-webhook URL (https). Messages are sent unsigned, without any Authorization header.
      </p>
      <fieldset className="mirror-channels" aria-describedby={channelsError ? 'mirror-channels-error' : undefined}>
        <legend>Channels</legend>
        {mine.length === 0 && <p className="muted">You are in no channel yet: join or create one in Channels first.</p>}
        <div className="checks">
          {mine.map((c) => (
            <label key={c.id} className="check">
              <input type="checkbox" checked={chosen.includes(c.id)} onChange={(e) => toggle(c.id, e.target.checked)} />#{c.name}
            </label>
          ))}
        </div>
        {channelsError && (
          <p role="alert" id="mirror-channels-error" className="error">
            {channelsError}
          </p>
        )}
      </fieldset>
      <label>
        Format
        <select value={format} onChange={(e) => setFormat(e.target.value as Mirror['format'])}>
          {MIRROR_FORMATS.map(([v, label]) => (
            <option key={v} value={v}>
              {label}
            </option>
          ))}
        </select>
      </label>
      <label className="check">
        <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} />
        Enabled
      </label>
      <div className="row">
        <button type="submit" disabled={save.isPending}>
          {mirror ? 'Save mirror' : 'Create mirror'}
        </button>
        {onCancel && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
      </div>
      <ErrorNote error={save.error} />
    </form>
  );
}
