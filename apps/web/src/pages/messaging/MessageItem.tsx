import { useEffect, useRef, useState, type ReactNode } from 'react';
import { useMutation, useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { ApiError, client, unwrap, type Page } from '../../api/client';
import type { Attachment, Message } from '../../api/types';
import { contentUrl, formatBytes } from '../../api/upload';
import { ConfirmButton, ErrorNote, focusMainHeading, formatTime } from '../../components/ui';
import type { Viewer } from './viewer';

/** Reactions offered on every message, by Slack-style name (shown as `:name:`, so no emoji font is needed). */
const REACTIONS = ['thumbsup', 'heart', 'eyes'];

/** Who is looking, to choose what to offer (the API decides): their identity and whether they are an owner or admin. */
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

/** The delete dialog's words: a thread root's replies are not deleted with it, but nothing lists them any more. */
function deleteQuestion(m: Message): { question: string; detail?: ReactNode } {
  const replies = m.thread_ts ? 0 : (m.reply_count ?? 0);
  if (replies === 0) return { question: 'Delete this message? This cannot be undone.' };
  return {
    question: 'Delete this message and hide its thread? This cannot be undone.',
    detail: (
      <p>
        It started a thread with {replies} {replies === 1 ? 'reply' : 'replies'}. The {replies === 1 ? 'reply is' : 'replies are'} not deleted, but the channel will no
        longer show {replies === 1 ? 'it' : 'them'}.
      </p>
    ),
  };
}

export function MessageItem({
  accountId, channelId, m, threadHref, onChanged, onDeleted, names, viewer,
}: {
  accountId: string; channelId: string; m: Message; threadHref?: string; onChanged: () => void; onDeleted?: () => void;
  names: Map<string, string>; viewer: Viewer;
}) {
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState(m.text);
  const [version, setVersion] = useState(m.version);
  const item = useRef<HTMLLIElement>(null);
  const editBox = useRef<HTMLTextAreaElement>(null);
  const editButton = useRef<HTMLButtonElement>(null);
  // after an edit is saved or cancelled, focus goes back to the message's Edit button
  const returnFocus = useRef(false);
  useEffect(() => {
    if (editing) editBox.current?.focus();
    else if (returnFocus.current) {
      returnFocus.current = false;
      editButton.current?.focus();
    }
  }, [editing]);
  const stopEditing = () => {
    returnFocus.current = Boolean(item.current?.contains(document.activeElement));
    setEditing(false);
  };
  const path = { accountId, channelId, ts: m.ts };
  const edit = useMutation({
    mutationFn: () => unwrap(client.PATCH<Message>('/accounts/{accountId}/channels/{channelId}/messages/{ts}', { params: { path }, body: { text: draft, version } })),
    onSuccess: () => {
      stopEditing();
      onChanged();
    },
  });
  const conflict = edit.error instanceof ApiError && edit.error.body.code === 'edit_conflict';
  const del = useMutation({
    mutationFn: () => unwrap(client.DELETE('/accounts/{accountId}/channels/{channelId}/messages/{ts}', { params: { path } })),
    onSuccess: () => {
      // the message (and the control that had focus) goes away: focus the page's heading, not <body>
      if (item.current?.contains(document.activeElement)) focusMainHeading();
      onChanged();
      onDeleted?.();
    },
  });
  // A reaction button is a toggle: pressed when the viewer's own reaction is there; pressing again removes it.
  const mine = (emoji: string) => Boolean(viewer.identityId && m.reactions.find((r) => r.emoji === emoji)?.by.includes(viewer.identityId));
  const react = useMutation({
    mutationFn: ({ emoji, on }: { emoji: string; on: boolean }) => {
      const opts = { params: { path: { ...path, emoji } } };
      const url = '/accounts/{accountId}/channels/{channelId}/messages/{ts}/reactions/{emoji}';
      return unwrap(on ? client.PUT(url, opts) : client.DELETE(url, opts));
    },
    onSuccess: onChanged,
  });
  // The latest version, to resolve an edit conflict: keep the draft, take the current text's version.
  const latest = useQuery({
    enabled: false,
    queryKey: ['message-latest', channelId, m.ts],
    queryFn: () => unwrap(client.GET<Page<Message>>('/accounts/{accountId}/channels/{channelId}/threads/{threadTs}', { params: { path: { accountId, channelId, threadTs: m.ts }, query: { limit: 1 } } })),
  });
  const current = latest.data?.data[0];
  // The API's rules (docs/api.md): the author, or an owner/admin, may edit and delete.
  const mayChange = Boolean(viewer.identityId) && (viewer.identityId === m.author || viewer.isManager);
  const { question, detail } = deleteQuestion(m);
  return (
    <li className="message" ref={item}>
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
            <textarea
              ref={editBox}
              rows={2}
              value={draft}
              onChange={(e) => setDraft(e.target.value)}
              onKeyDown={(e) => {
                // as the composer: Enter saves, Shift+Enter is a new line; Escape cancels
                if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
                  e.preventDefault();
                  if (!edit.isPending) edit.mutate();
                } else if (e.key === 'Escape') {
                  e.preventDefault();
                  stopEditing();
                }
              }}
            />
          </label>
          <div className="row">
            <button type="submit" disabled={edit.isPending}>
              Save
            </button>
            <button type="button" onClick={stopEditing}>
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
          <button
            key={name}
            type="button"
            aria-label={`React ${name}`}
            aria-pressed={mine(name)}
            disabled={react.isPending}
            onClick={() => react.mutate({ emoji: name, on: !mine(name) })}
          >
            {mine(name) ? `:${name}:` : `+:${name}:`}
          </button>
        ))}
        {threadHref && (
          <Link to={threadHref}>
            {m.reply_count ? `${m.reply_count} ${m.reply_count === 1 ? 'reply' : 'replies'}` : 'Reply in thread'}
          </Link>
        )}
        {mayChange && !editing && (
          <button
            ref={editButton}
            type="button"
            onClick={() => {
              edit.reset();
              setDraft(m.text);
              setVersion(m.version);
              setEditing(true);
            }}
          >
            Edit
          </button>
        )}
        {mayChange && <ConfirmButton label="Delete" question={question} detail={detail} onConfirm={() => del.mutate()} />}
      </div>
      <ErrorNote error={del.error ?? react.error} />
    </li>
  );
}
