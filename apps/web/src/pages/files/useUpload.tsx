import { useRef, useState } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { abandonUpload, uploadFile, UploadCancelled } from '../../api/upload';
import type { FileInfo } from '../../api/types';
import { formatBytes } from '../../api/upload';

/**
 * One upload at a time with its progress (bytes sent of the file), its result and its error. A
 * cancelled upload's reservation is abandoned (`abandonUpload`), so no pending row is left behind.
 */
export function useUpload(accountId: string, onDone?: (f: FileInfo) => void) {
  const qc = useQueryClient();
  const [progress, setProgress] = useState<{ sent: number; total: number } | null>(null);
  const abort = useRef<AbortController | null>(null);
  const mutation = useMutation({
    mutationFn: (file: File) => {
      abort.current = new AbortController();
      setProgress({ sent: 0, total: file.size });
      return uploadFile(accountId, file, (sent, total) => setProgress({ sent, total }), abort.current.signal);
    },
    onSuccess: (f) => {
      void qc.invalidateQueries({ queryKey: ['files', accountId] });
      onDone?.(f);
    },
    onError: (err) => {
      if (err instanceof UploadCancelled && err.fileId) {
        void abandonUpload(accountId, err.fileId).then(() => qc.invalidateQueries({ queryKey: ['files', accountId] }));
      }
    },
    onSettled: () => {
      abort.current = null;
    },
  });
  return { ...mutation, progress, cancel: () => abort.current?.abort() };
}

/** Progress announced in steps of 10 % (and at 100 %), so a screen reader is not told every event. */
export function announcedStep(sent: number, total: number): number {
  if (total <= 0) return 0;
  return Math.min(100, Math.floor((sent / total) * 10) * 10);
}

/**
 * A labelled progress bar while an upload runs ("Upload progress"), with bytes sent as text. The
 * live region says only "{label}: N %" at each 10 % step: its text changes ten times per upload
 * at most, so assistive technology announces those, not every progress event.
 */
export function UploadProgress({ label = 'Upload progress', progress, active }: { label?: string; progress: { sent: number; total: number } | null; active: boolean }) {
  if (!progress || !active) return null;
  return (
    <div className="meter">
      <progress max={progress.total} value={progress.sent} aria-label={label} />
      <span className="small">
        {formatBytes(progress.sent)} of {formatBytes(progress.total)}
      </span>
      <span className="sr-only" role="status">
        {`${label}: ${announcedStep(progress.sent, progress.total)} %`}
      </span>
    </div>
  );
}
