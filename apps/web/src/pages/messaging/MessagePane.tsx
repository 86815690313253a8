import { useEffect, useRef, useState, type FormEvent } from 'react';
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { ApiError, client, unwrap, type Page } from '../../api/client';
import type { Attachment, FileInfo, Message } from '../../api/types';
import { contentUrl, formatBytes } from '../../api/upload';
import { UploadProgress, useUpload } from '../files/useUpload';
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

/** A message box: text, optional files attached (each uploaded with its progress first), and its send button. */
function Composer({ accountId, label, button, attachLabel, onSend }: { accountId: string; label: string; button: string; attachLabel: string; onSend: (text: string, attachments: FileInfo[]) => Promise<unknown> }) {
  const [text, setText] = useState('');
  const [attached, setAttached] = useState<FileInfo[]>([]);
  const [inputKey, setInputKey] = useState(0);
  const upload = useUpload(accountId, (f) => {
    setAttached((list) => [...list, f]);
    setInputKey((k) => k + 1);
  });
  const send = useMutation({
    mutationFn: () => onSend(text, attached),
    onSuccess: () => {
      setText('');
      setAttached([]);
      upload.reset();
    },
  });
  const ready = (text.trim() || attached.length > 0) && !upload.isPending;
  return (
    <form
      className="composer"
      onSubmit={(e: FormEvent) => {
        e.preventDefault();
        if (ready) send.mutate();
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
              if (ready) send.mutate();
            }
          }}
        />
      </label>
      <div className="row">
        <label className="attach">
          {attachLabel}
          <input
            key={inputKey}
            type="file"
            disabled={upload.isPending}
            onChange={(e) => {
              const f = e.target.files?.[0];
              if (f) upload.mutate(f);
            }}
          />
        </label>
        <button type="submit" disabled={send.isPending || !ready}>
          {button}
        </button>
      </div>
      <UploadProgress label={`${attachLabel} progress`} progress={upload.progress} active={upload.isPending} />
      {attached.length > 0 && (
        <ul className="attachments" aria-label="Attached files">
          {attached.map((f) => (
            <li key={f.id}>
              {f.name} ({formatBytes(f.size)}){' '}
              <button type="button" onClick={() => setAttached((list) => list.filter((x) => x.id !== f.id))}>
                Remove {f.name}
              </button>
            </li>
          ))}
        </ul>
      )}
      <ErrorNote error={upload.error ?? send.error} />
    </form>
  );
}

/** A message's attachments: files as download links (name and size), links as links. */
function Attachments({ accountId, items }: { accountId: string; items: Attachment[] | undefined }) {
  if (!items || items.length === 0) return null;
  return (
    <ul className="attachments" aria-label="Attachments">
      {items.map((a, i) => (
        <li key={a.file_id ?? a.url ?? i}>
          {a.file_id ? (
            <>
              <a href={contentUrl(accountId, a.file_id)} download={a.name}>
                {a.title ?? a.name ?? a.file_id}
              </a>{' '}
              <span className="muted small">
                {a.size !== undefined && formatBytes(a.size)}
                {a.content_type && ` · ${a.content_type}`}
              </span>
            </>
          ) : a.url ? (
            <a href={a.url} rel="noopener noreferrer nofollow" target="_blank">
              {a.title ?? a.url}
            </a>
          ) : null}
        </li>
      ))}
    </ul>
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
      <Attachments accountId={accountId} items={m.attachments} />
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
  const post = (text: string, files: FileInfo[], thread_ts?: string) =>
    unwrap(
      client.POST<Message>('/accounts/{accountId}/channels/{channelId}/messages', {
        params: { path: { accountId, channelId } },
        body: { text, thread_ts, ...(files.length ? { attachments: files.map((f) => ({ file_id: f.id })) } : {}) },
      }),
    ).then(refresh);
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
        <Composer accountId={accountId} label="Message" button="Send" attachLabel="Attach file" onSend={(t, f) => post(t, f)} />
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
          <Composer accountId={accountId} label="Reply" button="Send reply" attachLabel="Attach file to thread" onSend={(t, f) => post(t, f, threadTs)} />
        </section>
      )}
    </div>
  );
}
