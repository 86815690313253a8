import { useRef, useState } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { uploadFile } from '../../api/upload';
import type { FileInfo } from '../../api/types';
import { formatBytes } from '../../api/upload';

/** One upload at a time with its progress (bytes sent of the file), its result and its error. */
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
    onSettled: () => {
      abort.current = null;
    },
  });
  return { ...mutation, progress, cancel: () => abort.current?.abort() };
}

/** A labelled progress bar while an upload runs ("Upload progress"), with bytes sent as text. */
export function UploadProgress({ label = 'Upload progress', progress, active }: { label?: string; progress: { sent: number; total: number } | null; active: boolean }) {
  if (!progress || !active) return null;
  return (
    <div className="meter">
      <progress max={progress.total} value={progress.sent} aria-label={label} />
      <span className="small" role="status">
        {formatBytes(progress.sent)} of {formatBytes(progress.total)}
      </span>
    </div>
  );
}
