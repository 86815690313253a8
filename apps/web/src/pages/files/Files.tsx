import { useState, type FormEvent } from 'react';
import { useInfiniteQuery } from '@tanstack/react-query';
import { client, unwrap, type Page } from '../../api/client';
import { useAccountId } from '../../api/hooks';
import type { FileInfo } from '../../api/types';
import { contentUrl, emptyFileError, formatBytes, UploadCancelled } from '../../api/upload';
import { ErrorNote, formatTime } from '../../components/ui';
import { useIdentityNames } from '../messaging/viewer';
import { UploadProgress, useUpload } from './useUpload';

/** The person's files and the files attached where they are a member, newest first, by cursor. */
export function useFiles(accountId: string) {
  return useInfiniteQuery({
    queryKey: ['files', accountId],
    initialPageParam: '',
    queryFn: ({ pageParam }) =>
      unwrap(client.GET<Page<FileInfo>>('/accounts/{accountId}/files', { params: { path: { accountId }, query: { limit: 50, cursor: pageParam || undefined } } })),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
}

function UploadForm({ accountId }: { accountId: string }) {
  const [file, setFile] = useState<File | null>(null);
  const [inputKey, setInputKey] = useState(0);
  const upload = useUpload(accountId, () => {
    setFile(null);
    setInputKey((k) => k + 1);
  });
  const cancelled = upload.error instanceof UploadCancelled;
  // the form's own check (an empty file), shown before anything is sent; follows the choice
  const fileError = file ? emptyFileError(file) : null;
  return (
    <form
      className="panel"
      aria-label="Upload a file"
      onSubmit={(e: FormEvent) => {
        e.preventDefault();
        if (file && !fileError) upload.mutate(file);
      }}
    >
      <label>
        File
        <input
          key={inputKey}
          type="file"
          required
          aria-describedby={fileError ? 'file-error' : undefined}
          onChange={(e) => {
            const chosen = e.target.files?.[0] ?? null;
            setFile(chosen);
            upload.reset();
          }}
        />
      </label>
      {fileError && (
        <p role="alert" id="file-error" className="error">
          {fileError}
        </p>
      )}
      <div className="row">
        <button type="submit" disabled={!file || fileError !== null || upload.isPending}>
          Upload
        </button>
        {upload.isPending && (
          <button type="button" onClick={upload.cancel}>
            Cancel upload
          </button>
        )}
      </div>
      <UploadProgress progress={upload.progress} active={upload.isPending} />
      {upload.isSuccess && (
        <p role="status" className="ok-text">
          Uploaded {upload.data.name} ({formatBytes(upload.data.size)}).
        </p>
      )}
      {cancelled ? (
        <p role="status">Upload cancelled.</p>
      ) : (
        <ErrorNote error={upload.error} />
      )}
    </form>
  );
}

/** Files: upload (reserve → PUT the bytes with progress → complete), the list, downloads. */
export function FilesPage() {
  const accountId = useAccountId();
  const files = useFiles(accountId);
  const names = useIdentityNames(accountId);
  const rows = files.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <>
      <h1>Files</h1>
      <p className="muted">
        Files you upload, and files attached to messages in the channels and direct messages you are in. Attach one to a message from the
        message box in <strong>Channels</strong>. Downloads are always saved, never opened in the app.
      </p>
      <UploadForm accountId={accountId} />
      <ErrorNote error={files.error} />
      {files.isSuccess && rows.length === 0 && <p>No files yet. Choose a file above and press “Upload”.</p>}
      {rows.length > 0 && (
        <table>
          <caption className="sr-only">Files, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Size</th>
              <th scope="col">Type</th>
              <th scope="col">State</th>
              <th scope="col">Uploaded by</th>
              <th scope="col">Uploaded</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((f) => (
              <tr key={f.id}>
                <td className="wrap">
                  {f.state === 'ready' ? (
                    <a href={contentUrl(accountId, f.id)} download={f.name}>
                      {f.name}
                    </a>
                  ) : (
                    f.name
                  )}
                </td>
                <td>{formatBytes(f.size)}</td>
                <td>
                  <code>{f.content_type}</code>
                </td>
                <td>
                  <span className={`badge ${f.state === 'ready' ? 'ok' : 'warn'}`} title={f.state === 'ready' ? 'Stored; it can be downloaded and attached.' : 'Reserved; its bytes were not completed (removed after 24 hours).'}>
                    {f.state}
                  </span>
                </td>
                <td>{names.get(f.uploaded_by) ?? f.uploaded_by}</td>
                <td>{formatTime(f.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {files.hasNextPage && (
        <button type="button" onClick={() => void files.fetchNextPage()} disabled={files.isFetchingNextPage}>
          Load more files
        </button>
      )}
    </>
  );
}
