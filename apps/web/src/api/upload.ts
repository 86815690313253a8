import { ApiError, client, unwrap } from './client';
import type { FileInfo } from './types';

interface Reservation {
  file: FileInfo;
  upload: { url: string; method: string; headers: Record<string, string>; expires_at: string };
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
    xhr.onabort = () => reject(new Error('The upload was cancelled.'));
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
  const reserved = await unwrap(
    client.POST<Reservation>('/accounts/{accountId}/uploads', {
      params: { path: { accountId } },
      body: { name: file.name, size: file.size, content_type: file.type || 'application/octet-stream' },
    }),
  );
  await putBytes(reserved.upload, file, onProgress, signal);
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
