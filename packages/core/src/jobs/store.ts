import { and, eq, jobs, lt, sql, type Executor } from '@teamchat/db';
import { newId } from '../ids';

export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed';

export interface JobView {
  id: string;
  type: string;
  status: JobStatus;
  result: unknown;
  error: unknown;
  created_at: string;
  finished_at: string | null;
}

type JobRow = typeof jobs.$inferSelect;

export function toJobView(row: JobRow): JobView {
  return {
    id: row.id,
    type: row.type,
    status: row.status as JobStatus,
    result: row.result ?? null,
    error: row.error ?? null,
    created_at: row.createdAt.toISOString(),
    finished_at: row.finishedAt ? row.finishedAt.toISOString() : null,
  };
}

/** Records a job in the caller's transaction; enqueue its id after commit. */
export async function createJob(
  tx: Executor,
  input: { accountId: string; type: string; payload: unknown; createdByUserId?: string },
): Promise<JobRow> {
  const [row] = await tx
    .insert(jobs)
    .values({ id: newId('job'), accountId: input.accountId, type: input.type, payload: input.payload, createdByUserId: input.createdByUserId })
    .returning();
  return row;
}

export async function getJob(db: Executor, accountId: string, jobId: string): Promise<JobRow | undefined> {
  const [row] = await db.select().from(jobs).where(and(eq(jobs.id, jobId), eq(jobs.accountId, accountId)));
  return row;
}

/** Claims a queued job for running; returns undefined if another runner has it or it is finished. */
export async function claimJob(db: Executor, jobId: string): Promise<JobRow | undefined> {
  const [row] = await db
    .update(jobs)
    .set({ status: 'running', startedAt: sql`now()` })
    .where(and(eq(jobs.id, jobId), eq(jobs.status, 'queued')))
    .returning();
  return row;
}

export async function finishJob(
  db: Executor,
  jobId: string,
  outcome: { status: 'succeeded'; result: unknown } | { status: 'failed'; error: unknown },
): Promise<void> {
  await db
    .update(jobs)
    .set({
      status: outcome.status,
      result: outcome.status === 'succeeded' ? (outcome.result ?? null) : null,
      error: outcome.status === 'failed' ? outcome.error : null,
      finishedAt: sql`now()`,
    })
    .where(eq(jobs.id, jobId));
}

/** Puts a running job back to queued so its next attempt (a BullMQ retry) can claim it again. */
export async function releaseJob(db: Executor, jobId: string): Promise<void> {
  await db.update(jobs).set({ status: 'queued', startedAt: null }).where(and(eq(jobs.id, jobId), eq(jobs.status, 'running')));
}

/** Jobs queued longer than `olderThanMs`: the enqueue after commit may have been lost. */
export async function findStrandedJobs(db: Executor, olderThanMs: number, limit = 100): Promise<string[]> {
  const rows = await db
    .select({ id: jobs.id })
    .from(jobs)
    .where(and(eq(jobs.status, 'queued'), lt(jobs.createdAt, sql`now() - make_interval(secs => ${olderThanMs / 1000})`)))
    .limit(limit);
  return rows.map((r) => r.id);
}

/** Jobs left `running` by a worker that died: put back to queued so they run again. */
export async function requeueAbandonedJobs(db: Executor, olderThanMs: number): Promise<number> {
  const rows = await db
    .update(jobs)
    .set({ status: 'queued', startedAt: null })
    .where(and(eq(jobs.status, 'running'), lt(jobs.startedAt, sql`now() - make_interval(secs => ${olderThanMs / 1000})`)))
    .returning({ id: jobs.id });
  return rows.length;
}
