import { useState, type FormEvent, type ReactNode } from 'react';
import { useInfiniteQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { useUrlParams } from '../components/url-params';
import { client, unwrap, type Page } from '../api/client';
import { useAccountId } from '../api/hooks';
import type { Message } from '../api/types';
import { ErrorNote, formatTime } from '../components/ui';
import { useIdentityNames } from './messaging/viewer';
import { useChannels } from './webhooks/Webhooks';

/** The API's highlight markers (docs/api.md "Search"): U+E000 opens a match, U+E001 closes it. */
const OPEN = '\uE000';
const CLOSE = '\uE001';

/** The API's `highlight` as text with its matches in <mark> (React escapes the text). */
export function fromMarkers(h: string): ReactNode[] {
  const out: ReactNode[] = [];
  let at = 0;
  for (let i = h.indexOf(OPEN); i !== -1; i = h.indexOf(OPEN, at)) {
    const end = h.indexOf(CLOSE, i + 1);
    if (end === -1) break;
    if (i > at) out.push(h.slice(at, i));
    out.push(<mark key={i}>{h.slice(i + 1, end)}</mark>);
    at = end + 1;
  }
  if (at < h.length) out.push(h.slice(at));
  return out;
}

/** Without the API's highlight: each case-insensitive occurrence of the query marked. */
export function highlight(text: string, q: string): ReactNode[] {
  if (!q) return [text];
  const out: ReactNode[] = [];
  const lower = text.toLowerCase();
  const needle = q.toLowerCase();
  let at = 0;
  for (let i = lower.indexOf(needle); i !== -1; i = lower.indexOf(needle, at)) {
    if (i > at) out.push(text.slice(at, i));
    out.push(<mark key={i}>{text.slice(i, i + needle.length)}</mark>);
    at = i + needle.length;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

/** Search messages of the channels and DMs the person is in (GET /search, web session only). */
export function SearchPage() {
  const accountId = useAccountId();
  const [params, set] = useUrlParams();
  const q = params.get('q') ?? '';
  const channelFilter = params.get('channel') ?? '';
  const sort = params.get('sort') === 'newest' ? 'newest' : 'relevance';
  const [draft, setDraft] = useState(q);
  const channels = useChannels(accountId);
  const names = useIdentityNames(accountId);
  const byId = new Map((channels.data?.data ?? []).map((c) => [c.id, c]));
  const where = (id: string) => (byId.get(id)?.kind === 'channel' ? { section: 'channels', label: `#${byId.get(id)!.name}` } : { section: 'dms', label: 'a direct message' });
  const results = useInfiniteQuery({
    enabled: q.length > 0,
    queryKey: ['search', accountId, q, channelFilter, sort],
    initialPageParam: '',
    queryFn: ({ pageParam }) =>
      unwrap(
        client.GET<Page<Message & { highlight?: string }>>('/accounts/{accountId}/search', {
          params: { path: { accountId }, query: { q, channel: channelFilter || undefined, sort, limit: 50, cursor: pageParam || undefined } },
        }),
      ),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  const rows = results.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <>
      <h1>Search</h1>
      <form
        role="search"
        className="filters"
        onSubmit={(e: FormEvent) => {
          e.preventDefault();
          set({ q: draft.trim() });
        }}
      >
        <label>
          Search messages
          <input type="search" value={draft} maxLength={200} onChange={(e) => setDraft(e.target.value)} />
        </label>
        <label>
          In channel
          <select value={channelFilter} onChange={(e) => set({ channel: e.target.value })}>
            <option value="">All my channels and DMs</option>
            {(channels.data?.data ?? [])
              .filter((c) => c.kind === 'channel' && c.is_member !== false)
              .map((c) => (
                <option key={c.id} value={c.id}>
                  #{c.name}
                </option>
              ))}
          </select>
        </label>
        <label>
          Sort
          <select value={sort} onChange={(e) => set({ sort: e.target.value === 'newest' ? 'newest' : '' })}>
            <option value="relevance">Best match</option>
            <option value="newest">Newest first</option>
          </select>
        </label>
        <button type="submit">Search</button>
      </form>
      <ErrorNote error={results.error} />
      {!q && (
        <p>
          Type words to find in the channels and direct messages you are in: <code>"a phrase"</code>, <code>OR</code>, <code>-word</code> work, and
          parts of words, URLs and addresses match too.
        </p>
      )}
      {results.isSuccess && rows.length === 0 && <p>No message matches “{q}”.</p>}
      <ul className="message-list" aria-label="Results">
        {rows.map((m) => (
          <li key={`${m.channel_id}:${m.ts}`} className="message">
            <div className="meta">
              <Link to={`/a/${accountId}/${where(m.channel_id).section}/${m.channel_id}${m.thread_ts ? `/threads/${m.thread_ts}` : ''}`}>{where(m.channel_id).label}</Link>{' '}
              <strong>{names.get(m.author) ?? m.author}</strong> <time dateTime={m.created_at}>{formatTime(m.created_at)}</time>
            </div>
            <p className="text">{m.highlight ? fromMarkers(m.highlight) : highlight(m.text, q)}</p>
          </li>
        ))}
      </ul>
      {results.hasNextPage && (
        <button type="button" onClick={() => void results.fetchNextPage()}>
          More results
        </button>
      )}
    </>
  );
}
