import { useState } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { client, unwrap } from '../../api/client';
import { Dialog, ErrorNote } from '../../components/ui';

interface Preview {
  count: number;
  since: string;
}
interface Started {
  count: number;
  job_id: string;
  job_url: string;
}
/** The job's `result` when it succeeded (docs/web.md "Bulk replay"): sent, not sent, and how the sends ended. */
interface ReplayResult {
  replayed: number;
  skipped: number;
  outcomes: Record<string, number>;
}
interface Job {
  status: string;
  result: ReplayResult | null;
  error: { message: string } | null;
}

const deliveries = (n: number) => `${n} ${n === 1 ? 'delivery' : 'deliveries'}`;

/** What the job reports, in words: "Replayed 2 deliveries: 1 delivered, 1 failed. 1 skipped: …". */
export function describeReplay(asked: number, r: ReplayResult): string {
  const parts: string[] = [];
  const outcomes = Object.entries(r.outcomes ?? {})
    .filter(([, n]) => n > 0)
    .map(([status, n]) => `${n} ${status}`);
  parts.push(r.replayed === 0 ? 'Nothing was replayed.' : `Replayed ${deliveries(r.replayed)}${outcomes.length ? `: ${outcomes.join(', ')}` : ''}.`);
  if (r.skipped > 0) {
    parts.push(`${r.skipped} not sent: ${r.skipped === 1 ? 'its' : 'their'} message text is from a channel you cannot read.`);
  }
  const gone = asked - r.replayed - r.skipped;
  if (gone > 0) parts.push(`${gone} no longer needed a replay (already replayed or still being sent).`);
  return parts.join(' ');
}

/** "Replay failed since…": shows how many dead/failed deliveries it will send, then sends them as a job. */
export function ReplayFailedSince({ accountId, endpointId }: { accountId: string; endpointId: string }) {
  const qc = useQueryClient();
  const [open, setOpen] = useState(false);
  const [since, setSince] = useState(() => toLocalInput(new Date(Date.now() - 86_400_000)));
  const [preview, setPreview] = useState<Preview | null>(null);
  const [outcome, setOutcome] = useState<string | null>(null);
  const path = { accountId, endpointId };
  const count = useMutation({
    mutationFn: () =>
      unwrap(client.GET<Preview>('/accounts/{accountId}/webhooks/{endpointId}/replay-failed', { params: { path, query: { since: new Date(since).toISOString() } } })),
    onSuccess: setPreview,
  });
  const start = useMutation({
    mutationFn: async () => {
      const started = await unwrap(
        client.POST<Started>('/accounts/{accountId}/webhooks/{endpointId}/replay-failed', { params: { path }, body: { since: new Date(since).toISOString() } }),
      );
      setOutcome(`Replaying ${deliveries(started.count)}…`);
      for (let i = 0; i < 600; i++) {
        const job = await unwrap(client.GET<Job>('/accounts/{accountId}/jobs/{jobId}', { params: { path: { accountId, jobId: started.job_id } } }));
        if (job.status === 'succeeded') return describeReplay(started.count, job.result ?? { replayed: 0, skipped: 0, outcomes: {} });
        if (job.status === 'failed') throw new Error(job.error?.message ?? 'The replay job failed.');
        await new Promise((r) => setTimeout(r, 1000));
      }
      return 'The replay is still running; its deliveries appear in the log as they are sent.';
    },
    onSuccess: (text) => {
      setOutcome(text);
      setPreview(null);
      void qc.invalidateQueries({ queryKey: ['deliveries', accountId, endpointId] });
    },
  });
  return (
    <>
      <button type="button" onClick={() => setOpen(true)}>
        Replay failed since…
      </button>
      <p role="status">{outcome}</p>
      <Dialog title="Replay failed deliveries" open={open} onClose={() => setOpen(false)}>
        <p>Sends again every dead or failed delivery of this endpoint since the time you choose (same body, same event id).</p>
        <label>
          Since
          <input
            type="datetime-local"
            value={since}
            onChange={(e) => {
              setSince(e.target.value);
              setPreview(null);
            }}
          />
        </label>
        <div className="row">
          <button type="button" onClick={() => count.mutate()} disabled={count.isPending}>
            Count deliveries
          </button>
        </div>
        {preview && (
          <p role="status">
            {preview.count === 0 ? 'No dead or failed deliveries since then.' : `This will replay ${deliveries(preview.count)}.`}
          </p>
        )}
        <ErrorNote error={count.error ?? start.error} />
        <div className="row">
          <button
            type="button"
            disabled={!preview || preview.count === 0 || start.isPending}
            onClick={() => {
              setOpen(false);
              start.mutate();
            }}
          >
            {preview ? `Replay ${deliveries(preview.count)}` : 'Replay deliveries'}
          </button>
          <button type="button" onClick={() => setOpen(false)}>
            Cancel
          </button>
        </div>
      </Dialog>
      <ErrorNote error={start.error} />
    </>
  );
}

function toLocalInput(d: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
