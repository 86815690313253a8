import { ApiError, client, unwrap } from './client';
import type { FileInfo } from './types';

interface Reservation {
  file: FileInfo;
  upload: { url: string; method: string; headers: Record<string, string>; expires_at: string };
}

/**
 * The person cancelled the upload. `fileId` is the reservation it leaves (abandoned at once:
 * `abandonUpload`), null when cancelled before it existed.
 */
export class UploadCancelled extends Error {
  constructor(readonly fileId: string | null) {
    super('The upload was cancelled.');
  }
}

/** Bytes sent so far of the whole file (0..1), for a progress bar. */
export type OnProgress = (sent: number, total: number) => void;

/**
 * Sends the bytes to the upload URL with XMLHttpRequest, the one browser API that reports upload
 * progress. The URL is the permission (a signed local URL on the web host or an S3 presigned
 * URL), so no cookie or CSRF token goes with it.
 */
function putBytes(target: Reservation['upload'], file: Blob, onProgress: OnProgress, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(target.method, target.url);
    for (const [k, v] of Object.entries(target.headers)) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : file.size);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress(file.size, file.size);
        resolve();
        return;
      }
      let body: ApiError['body'] = { code: 'internal', message: `The upload was refused (${xhr.status}).` };
      try {
        const parsed = JSON.parse(xhr.responseText) as { error?: ApiError['body'] };
        if (parsed.error?.message) body = parsed.error;
      } catch {
        // an S3 server answers XML: keep the status
      }
      const ra = xhr.getResponseHeader('Retry-After');
      reject(new ApiError(body, xhr.status, ra ? Number(ra) : null));
    };
    xhr.onerror = () => reject(new Error('The upload failed: the connection was lost. Try again.'));
    xhr.onabort = () => reject(new UploadCancelled(null));
    signal?.addEventListener('abort', () => xhr.abort());
    xhr.send(file);
  });
}

/**
 * The three steps of an upload (docs/api.md "Files"): reserve (`POST /uploads`), send exactly
 * the bytes to the returned URL with its method and headers, then `POST …/complete`; answers the
 * ready file. Any step's refusal is thrown with the API's message.
 */
export async function uploadFile(accountId: string, file: File, onProgress: OnProgress, signal?: AbortSignal): Promise<FileInfo> {
  const empty = emptyFileError(file);
  if (empty) throw new Error(empty);
  let reserved: Reservation;
  try {
    reserved = await unwrap(
      client.POST<Reservation>('/accounts/{accountId}/uploads', {
        params: { path: { accountId } },
        body: { name: file.name, size: file.size, content_type: file.type || 'application/octet-stream' },
      }),
    );
  } catch (err) {
    throw plainSizeError(err, file);
  }
  if (signal?.aborted) throw new UploadCancelled(reserved.file.id);
  try {
    await putBytes(reserved.upload, file, onProgress, signal);
  } catch (err) {
    throw err instanceof UploadCancelled ? new UploadCancelled(reserved.file.id) : err;
  }
  return unwrap(client.POST<FileInfo>('/accounts/{accountId}/uploads/{fileId}/complete', { params: { path: { accountId, fileId: reserved.file.id } } }));
}

/** Where a file's bytes are downloaded (a sandboxed attachment, never shown inline). */
export function contentUrl(accountId: string, fileId: string): string {
  return `/accounts/${encodeURIComponent(accountId)}/files/${encodeURIComponent(fileId)}/content`;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MB`;
  return `${(n / 1024 ** 3).toFixed(2)} GB`;
}

/** The form's own check before anything is sent: the API takes no empty file (`size` ≥ 1). */
export function emptyFileError(file: File): string | null {
  return file.size === 0 ? `${file.name} is empty: choose a file with something in it.` : null;
}

/** A plan limit in words: 262144000 → "250 MB" (binary units, as the plans are set). */
export function formatLimit(bytes: number): string {
  if (bytes >= 1024 ** 3 && bytes % 1024 ** 3 === 0) return `${bytes / 1024 ** 3} GB`;
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MB`;
  return formatBytes(bytes);
}

/**
 * The API's refusal of a file above the plan's file size (`400`, `field: "size"`, with `limit`),
 * said plainly with the limit in MB; any other error unchanged.
 */
function plainSizeError(err: unknown, file: File): unknown {
  if (!(err instanceof ApiError) || err.status !== 400 || err.body.field !== 'size' || typeof err.body.limit !== 'number') return err;
  const message = `${file.name} is too big (${formatBytes(file.size)}): files on this account's plan may be at most ${formatLimit(err.body.limit)}.`;
  return new ApiError({ ...err.body, message }, err.status, err.retryAfter);
}

/**
 * Gives up a cancelled upload's reservation (`DELETE /uploads/{fileId}`): it and any bytes sent
 * go at once, out of the Files list and the account's storage. A failure here is not the person's
 * concern: a reservation never completed is removed by the API after 24 hours anyway.
 */
export async function abandonUpload(accountId: string, fileId: string): Promise<void> {
  await unwrap(client.DELETE<void>('/accounts/{accountId}/uploads/{fileId}', { params: { path: { accountId, fileId } } })).catch(() => undefined);
}
