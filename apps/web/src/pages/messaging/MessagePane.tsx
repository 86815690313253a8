import { useEffect, useRef, useState, type FormEvent, type ReactNode } from 'react';
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from 'react-router';
import { client, unwrap, type Page } from '../../api/client';
import type { FileInfo, Message } from '../../api/types';
import { formatBytes } from '../../api/upload';
import { UploadProgress, useUpload } from '../files/useUpload';
import { ErrorNote } from '../../components/ui';
import { MessageItem } from './MessageItem';
import { useIdentityNames, useViewer } from './viewer';

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

/** A channel's (or DM's) messages: newest first, older pages loaded by cursor as you scroll. */
export function MessagePane({ accountId, channelId, title, base, threadTs, header }: { accountId: string; channelId: string; title: string; base: string; threadTs?: string; header?: ReactNode }) {
  const qc = useQueryClient();
  const navigate = useNavigate();
  const viewer = useViewer(accountId);
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
  // A thread answers its root first; when the root is gone only orphan replies remain: show none of them.
  const threadRows = thread.data?.data ?? [];
  const rootGone = thread.isSuccess && threadRows[0]?.ts !== threadTs;
  // deleting a thread's root closes the thread (its replies are no longer listed anywhere)
  const closeThread = () => {
    qc.removeQueries({ queryKey: ['thread', accountId, channelId, threadTs] });
    void navigate(base);
  };
  return (
    <div className="pane">
      <section aria-labelledby="pane-title" className="messages">
        <h2 id="pane-title">{title}</h2>
        {header}
        <Composer accountId={accountId} label="Message" button="Send" attachLabel="Attach file" onSend={(t, f) => post(t, f)} />
        <ErrorNote error={messages.error} />
        {messages.isSuccess && rows.length === 0 && <p>No messages yet. Write the first one above.</p>}
        <ul className="message-list">
          {rows.map((m) => (
            <MessageItem
              key={m.ts}
              accountId={accountId}
              channelId={channelId}
              m={m}
              threadHref={`${base}/threads/${m.ts}`}
              onChanged={refresh}
              onDeleted={m.ts === threadTs ? closeThread : undefined}
              names={names}
              viewer={viewer}
            />
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
          {rootGone ? (
            <p>The message that started this thread was deleted, so its thread is no longer shown.</p>
          ) : (
            <>
              <ul className="message-list">
                {threadRows.map((m) => (
                  <MessageItem
                    key={m.ts}
                    accountId={accountId}
                    channelId={channelId}
                    m={m}
                    onChanged={refresh}
                    onDeleted={m.ts === threadTs ? closeThread : undefined}
                    names={names}
                    viewer={viewer}
                  />
                ))}
              </ul>
              <Composer accountId={accountId} label="Reply" button="Send reply" attachLabel="Attach file to thread" onSend={(t, f) => post(t, f, threadTs)} />
            </>
          )}
        </section>
      )}
    </div>
  );
}
