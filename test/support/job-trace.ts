import type { Deps } from '@teamchat/core';

/**
 * What the queue says about a background job, for a test's failure message: its BullMQ state,
 * the attempts made and the last failure. A test that waited in vain for a job then tells
 * whether the job was never enqueued, waits for a retry's backoff, or is still running.
 */
export async function jobTrace(deps: Pick<Deps, 'jobQueue'>, jobId: string): Promise<string> {
  const job = await deps.jobQueue.queue.getJob(jobId);
  if (!job) return `BullMQ has no job ${jobId} (never enqueued, or removed)`;
  const at = (ms: number | undefined) => (ms ? new Date(ms).toISOString() : 'never');
  return `BullMQ: ${await job.getState()}, attempts made ${job.attemptsMade}, last failure ${job.failedReason || 'none'}, `
    + `added ${at(job.timestamp)}, last processed ${at(job.processedOn)}`;
}
