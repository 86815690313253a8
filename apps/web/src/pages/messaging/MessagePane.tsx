import { useEffect, useRef, useState, type FormEvent } from 'react';
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { ApiError, client, unwrap, type Page } from '../../api/client';
import type { Message } from '../../api/types';
import { ConfirmButton, ErrorNote, formatTime } from '../../components/ui';

/** Identity id → name, for authors (people and agents); ids stand in until it loads. */
export function useIdentityNames(accountId: string): Map<string, string> {
  const q = useQuery({
    queryKey: ['identities', accountId],
    queryFn: () => unwrap(client.GET<Page<{ id: string; name: string; kind: string }>>('/accounts/{accountId}/identities', { params: { path: { accountId }, query: { limit: 200 } } })),
  });
  return new Map((q.data?.data ?? []).map((i) => [i.id, i.name]));
}

/** Reactions offered on every message, by Slack-style name (shown as `:name:`, so no emoji font is needed). */
const REACTIONS = ['thumbsup', 'heart', 'eyes'];

function Composer({ label, button, onSend }: { label: string; button: string; onSend: (text: string) => Promise<unknown> }) {
  const [text, setText] = useState('');
  const send = useMutation({ mutationFn: () => onSend(text), onSuccess: () => setText('') });
  return (
    <form
      className="composer"
      onSubmit={(e: FormEvent) => {
        e.preventDefault();
        if (text.trim()) send.mutate();
      }}
    >
      <label>
        {label}
        <textarea
          rows={2}
          value={text}
          onChange={(e) => setText(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey) {
              e.preventDefault();
              if (text.trim()) send.mutate();
            }
          }}
        />
      </label>
      <button type="submit" disabled={send.isPending}>
        {button}
      </button>
      <ErrorNote error={send.error} />
    </form>
  );
}

function MessageItem({ accountId, channelId, m, threadHref, onChanged, names }: { accountId: string; channelId: string; m: Message; threadHref?: string; onChanged: () => void; names: Map<string, string> }) {
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState(m.text);
  const [version, setVersion] = useState(m.version);
  const path = { accountId, channelId, ts: m.ts };
  const edit = useMutation({
    mutationFn: () => unwrap(client.PATCH<Message>('/accounts/{accountId}/channels/{channelId}/messages/{ts}', { params: { path }, body: { text: draft, version } })),
    onSuccess: () => {
      setEditing(false);
      onChanged();
    },
  });
  const conflict = edit.error instanceof ApiError && edit.error.body.code === 'edit_conflict';
  const del = useMutation({
    mutationFn: () => unwrap(client.DELETE('/accounts/{accountId}/channels/{channelId}/messages/{ts}', { params: { path } })),
    onSuccess: onChanged,
  });
  const react = useMutation({
    mutationFn: (emoji: string) =>
      unwrap(client.PUT('/accounts/{accountId}/channels/{channelId}/messages/{ts}/reactions/{emoji}', { params: { path: { ...path, emoji } } })),
    onSuccess: onChanged,
  });
  // The latest version, to resolve an edit conflict: keep the draft, take the current text's version.
  const latest = useQuery({
    enabled: false,
    queryKey: ['message-latest', channelId, m.ts],
    queryFn: () => unwrap(client.GET<Page<Message>>('/accounts/{accountId}/channels/{channelId}/threads/{threadTs}', { params: { path: { accountId, channelId, threadTs: m.ts }, query: { limit: 1 } } })),
  });
  const current = latest.data?.data[0];
  return (
    <li className="message">
      <div className="meta">
        <strong>{names.get(m.author) ?? m.author}</strong> <time dateTime={m.created_at}>{formatTime(m.created_at)}</time>
        {m.edited_at && <span className="muted"> (edited)</span>}
      </div>
      {editing ? (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            edit.mutate();
          }}
        >
          <label>
            Edit message
            <textarea rows={2} value={draft} onChange={(e) => setDraft(e.target.value)} />
          </label>
          <div className="row">
            <button type="submit" disabled={edit.isPending}>
              Save
            </button>
            <button type="button" onClick={() => setEditing(false)}>
              Cancel
            </button>
          </div>
          <ErrorNote error={edit.error} />
          {conflict && (
            <div className="panel">
              <p>Someone changed this message since you opened it. Load the latest text, then save again to replace it with yours.</p>
              <button type="button" onClick={() => void latest.refetch().then((r) => r.data?.data[0] && setVersion(r.data.data[0].version))}>
                Load latest
              </button>
              {current && (
                <p>
                  Latest: <q>{current.text}</q>
                </p>
              )}
            </div>
          )}
        </form>
      ) : (
        <p className="text">{m.text}</p>
      )}
      <div className="row small">
        {m.reactions.map((r) => (
          <span key={r.emoji} className="badge">
            :{r.emoji}: {r.count}
          </span>
        ))}
        {REACTIONS.map((name) => (
          <button key={name} type="button" aria-label={`React ${name}`} onClick={() => react.mutate(name)}>
            +:{name}:
          </button>
        ))}
        {threadHref && (
          <Link to={threadHref}>
            {m.reply_count ? `${m.reply_count} ${m.reply_count === 1 ? 'reply' : 'replies'}` : 'Reply in thread'}
          </Link>
        )}
        {!editing && (
          <button
            type="button"
            onClick={() => {
              setDraft(m.text);
              setVersion(m.version);
              setEditing(true);
            }}
          >
            Edit
          </button>
        )}
        <ConfirmButton label="Delete" question="Delete this message? This cannot be undone." onConfirm={() => del.mutate()} />
      </div>
      <ErrorNote error={del.error ?? react.error} />
    </li>
  );
}

/** A channel's (or DM's) messages: newest first, older pages loaded by cursor as you scroll. */
export function MessagePane({ accountId, channelId, title, base, threadTs }: { accountId: string; channelId: string; title: string; base: string; threadTs?: string }) {
  const qc = useQueryClient();
  const key = ['messages', accountId, channelId];
  const messages = useInfiniteQuery({
    queryKey: key,
    initialPageParam: '',
    queryFn: ({ pageParam }) =>
      unwrap(
        client.GET<Page<Message>>('/accounts/{accountId}/channels/{channelId}/messages', {
          params: { path: { accountId, channelId }, query: { limit: 30, cursor: pageParam || undefined } },
        }),
      ),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  const thread = useQuery({
    enabled: Boolean(threadTs),
    queryKey: ['thread', accountId, channelId, threadTs],
    queryFn: () =>
      unwrap(
        client.GET<Page<Message>>('/accounts/{accountId}/channels/{channelId}/threads/{threadTs}', {
          params: { path: { accountId, channelId, threadTs: threadTs ?? '' }, query: { limit: 200 } },
        }),
      ),
  });
  const names = useIdentityNames(accountId);
  const refresh = () => {
    void qc.invalidateQueries({ queryKey: key });
    void qc.invalidateQueries({ queryKey: ['thread', accountId, channelId] });
  };
  const post = (text: string, thread_ts?: string) =>
    unwrap(client.POST<Message>('/accounts/{accountId}/channels/{channelId}/messages', { params: { path: { accountId, channelId } }, body: { text, thread_ts } })).then(refresh);
  const sentinel = useRef<HTMLLIElement>(null);
  useEffect(() => {
    const el = sentinel.current;
    if (!el || !('IntersectionObserver' in window)) return;
    const io = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting) && messages.hasNextPage && !messages.isFetchingNextPage) void messages.fetchNextPage();
    });
    io.observe(el);
    return () => io.disconnect();
  }, [messages]);
  const rows = messages.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <div className="pane">
      <section aria-labelledby="pane-title" className="messages">
        <h2 id="pane-title">{title}</h2>
        <Composer label="Message" button="Send" onSend={(t) => post(t)} />
        <ErrorNote error={messages.error} />
        {messages.isSuccess && rows.length === 0 && <p>No messages yet. Write the first one above.</p>}
        <ul className="message-list">
          {rows.map((m) => (
            <MessageItem key={m.ts} accountId={accountId} channelId={channelId} m={m} threadHref={`${base}/threads/${m.ts}`} onChanged={refresh} names={names} />
          ))}
          <li ref={sentinel} aria-hidden="true" />
        </ul>
        {messages.hasNextPage && (
          <button type="button" onClick={() => void messages.fetchNextPage()} disabled={messages.isFetchingNextPage}>
            Load older messages
          </button>
        )}
      </section>
      {threadTs && (
        <section aria-labelledby="thread-title" className="thread">
          <h2 id="thread-title">Thread</h2>
          <Link to={base}>Close thread</Link>
          <ErrorNote error={thread.error} />
          <ul className="message-list">
            {(thread.data?.data ?? []).map((m) => (
              <MessageItem key={m.ts} accountId={accountId} channelId={channelId} m={m} onChanged={refresh} names={names} />
            ))}
          </ul>
          <Composer label="Reply" button="Send reply" onSend={(t) => post(t, threadTs)} />
        </section>
      )}
    </div>
  );
}
