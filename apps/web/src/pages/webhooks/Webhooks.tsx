import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { client, unwrap, type Page } from '../../api/client';
import { useAccountId } from '../../api/hooks';
import type { Channel, Endpoint } from '../../api/types';
import { EVENT_TYPES } from '../../api/vocabulary';
import { EndpointBadge, ENDPOINT_REASONS } from '../../components/states';
import { ErrorNote, formatTime, SecretDialog } from '../../components/ui';

export function useChannels(accountId: string) {
  return useQuery({
    queryKey: ['channels', accountId],
    queryFn: () => unwrap(client.GET<Page<Channel>>('/accounts/{accountId}/channels', { params: { path: { accountId }, query: { limit: 200 } } })),
  });
}

function AddEndpointForm({ onCreated }: { onCreated: (e: Endpoint) => void }) {
  const accountId = useAccountId();
  const channels = useChannels(accountId);
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<string[]>(['message.posted']);
  const [allChannels, setAllChannels] = useState(true);
  const [chosen, setChosen] = useState<string[]>([]);
  const [payload, setPayload] = useState('pointers');
  const [authorization, setAuthorization] = useState('');
  // the form's own checks, in plain words, before anything is sent; cleared when the field changes
  const [eventsError, setEventsError] = useState<string | null>(null);
  const [channelsError, setChannelsError] = useState<string | null>(null);
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        client.POST<Endpoint>('/accounts/{accountId}/webhooks', {
          params: { path: { accountId } },
          body: { url, events, channels: allChannels ? 'all' : chosen, payload, ...(authorization ? { authorization } : {}) },
        }),
      ),
    onSuccess: onCreated,
  });
  const toggle = (list: string[], v: string, on: boolean) => (on ? [...list, v] : list.filter((x) => x !== v));
  return (
    <form
      className="panel"
      aria-label="Add endpoint"
      onSubmit={(e: FormEvent) => {
        e.preventDefault();
        const noEvents = events.length === 0 ? 'Choose at least one event.' : null;
        const noChannels = !allChannels && chosen.length === 0 ? 'Choose at least one channel, or pick “All channels”.' : null;
        setEventsError(noEvents);
        setChannelsError(noChannels);
        if (noEvents || noChannels) {
          create.reset();
          const first = e.currentTarget.querySelector<HTMLInputElement>(noEvents ? '#events-fieldset input' : '#channels-fieldset input');
          first?.focus();
          return;
        }
        create.mutate();
      }}
    >
      <label>
        URL
        <input type="url" required value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://example.com/webhooks" />
      </label>
      <fieldset id="events-fieldset" aria-describedby={eventsError ? 'events-error' : undefined}>
        <legend>Events</legend>
        <div className="checks">
          {EVENT_TYPES.map((t) => (
            <label key={t} className="check">
              <input
                type="checkbox"
                checked={events.includes(t)}
                onChange={(e) => {
                  setEvents(toggle(events, t, e.target.checked));
                  setEventsError(null);
                }}
              />
              {t}
            </label>
          ))}
        </div>
        {eventsError && (
          <p role="alert" id="events-error" className="error">
            {eventsError}
          </p>
        )}
      </fieldset>
      <fieldset id="channels-fieldset" aria-describedby={channelsError ? 'channels-error' : undefined}>
        <legend>Channels</legend>
        <label className="check">
          <input
            type="radio"
            name="channels"
            checked={allChannels}
            onChange={() => {
              setAllChannels(true);
              setChannelsError(null);
            }}
          />
          All channels
        </label>
        <label className="check">
          <input
            type="radio"
            name="channels"
            checked={!allChannels}
            onChange={() => {
              setAllChannels(false);
              setChannelsError(null);
            }}
          />
          Chosen channels
        </label>
        {!allChannels && (
          <div className="checks">
            {(channels.data?.data ?? [])
              .filter((c) => c.kind === 'channel')
              .map((c) => (
                <label key={c.id} className="check">
                  <input
                    type="checkbox"
                    checked={chosen.includes(c.id)}
                    onChange={(e) => {
                      setChosen(toggle(chosen, c.id, e.target.checked));
                      setChannelsError(null);
                    }}
                  />
                  #{c.name}
                </label>
              ))}
          </div>
        )}
        {channelsError && (
          <p role="alert" id="channels-error" className="error">
            {channelsError}
          </p>
        )}
      </fieldset>
      <label>
        Payload
        <select value={payload} onChange={(e) => setPayload(e.target.value)}>
          <option value="pointers">pointers (ids only, never text)</option>
          <option value="text">text (with the message text)</option>
        </select>
      </label>
      <label>
        Authorization header
        <input
          type="password"
          autoComplete="off"
          value={authorization}
          onChange={(e) => setAuthorization(e.target.value)}
          aria-describedby="auth-help"
        />
      </label>
      <p id="auth-help" className="muted">
        Optional. Sent as <code>Authorization: Bearer &lt;value&gt;</code> with every delivery; never shown again.
      </p>
      <button type="submit" disabled={create.isPending}>
        Create endpoint
      </button>
      <ErrorNote error={create.error} />
    </form>
  );
}

function rate(e: Endpoint): string {
  const r = e.health?.success_rate_24h;
  return r === null || r === undefined ? '—' : `${Math.round(r * 100)} % of ${e.health?.attempts_24h} attempts`;
}

export function WebhooksPage() {
  const accountId = useAccountId();
  const qc = useQueryClient();
  const [adding, setAdding] = useState(false);
  const [secret, setSecret] = useState<string | null>(null);
  const list = useQuery({
    queryKey: ['webhooks', accountId],
    queryFn: () => unwrap(client.GET<Page<Endpoint>>('/accounts/{accountId}/webhooks', { params: { path: { accountId }, query: { limit: 200 } } })),
  });
  // Several endpoints may share a URL (other events or channels): those rows say which is which.
  const urlCount = new Map<string, number>();
  for (const e of list.data?.data ?? []) urlCount.set(e.url, (urlCount.get(e.url) ?? 0) + 1);
  return (
    <>
      <h1>Webhooks</h1>
      <p className="muted">Signed HTTPS POSTs to your receivers when something happens in this account.</p>
      <button type="button" aria-expanded={adding} onClick={() => setAdding(!adding)}>
        Add endpoint
      </button>
      {adding && (
        <AddEndpointForm
          onCreated={(e) => {
            setAdding(false);
            setSecret(e.secret ?? null);
            void qc.invalidateQueries({ queryKey: ['webhooks', accountId] });
          }}
        />
      )}
      <SecretDialog title="Signing secret" secret={secret} onClose={() => setSecret(null)} />
      <ErrorNote error={list.error} />
      {list.data && list.data.data.length === 0 && <p>No endpoints yet. Use “Add endpoint” to register a receiver.</p>}
      {list.data && list.data.data.length > 0 && (
        <table>
          <caption className="sr-only">Endpoints and their health</caption>
          <thead>
            <tr>
              <th scope="col">Endpoint</th>
              <th scope="col">State</th>
              <th scope="col">Last success</th>
              <th scope="col">Last failure</th>
              <th scope="col">Success 24 h</th>
              <th scope="col">Median latency</th>
              <th scope="col">Pending</th>
            </tr>
          </thead>
          <tbody>
            {list.data.data.map((e) => (
              <tr key={e.id}>
                <td>
                  <Link to={`/a/${accountId}/webhooks/${e.id}`} aria-describedby={(urlCount.get(e.url) ?? 0) > 1 ? `which-${e.id}` : undefined}>
                    {e.url}
                  </Link>
                  {(urlCount.get(e.url) ?? 0) > 1 && (
                    <div className="muted small" id={`which-${e.id}`}>
                      {e.events.join(', ')} · {e.channels === 'all' ? 'all channels' : `${e.channels.length} ${e.channels.length === 1 ? 'channel' : 'channels'}`} · id{' '}
                      <code>{e.id}</code>
                    </div>
                  )}
                </td>
                <td>
                  <EndpointBadge enabled={e.enabled} reason={e.disabled_reason} />
                  {e.disabled_reason && <div className="muted small">{ENDPOINT_REASONS[e.disabled_reason]}</div>}
                </td>
                <td>{formatTime(e.health?.last_success_at)}</td>
                <td>{formatTime(e.health?.last_failure_at)}</td>
                <td>{rate(e)}</td>
                <td>{e.health?.median_latency_ms == null ? '—' : `${e.health.median_latency_ms} ms`}</td>
                <td>{e.health?.pending_count ?? 0}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
