import Joi from 'joi';
import { and, approvals, channels, eq, messages } from '@teamchat/db';
import { outboxTransaction } from '../../events/wake';
import { defineJob } from '../../jobs/catalogue';
import { performMessageDelete } from '../messages/delete-message';
import { parseTs } from '../ts';
import { assertDeciderStillMay } from './decide-approval';
import { MESSAGE_DELETE_JOB } from './job-types';

/**
 * Runs an approved message deletion. The job reloads the approval and the message; a message
 * already gone is a success with `deleted: false` (the outcome the person asked for holds).
 */
export const messageDeleteJob = defineJob<{ approval_id: string }>({
  type: MESSAGE_DELETE_JOB,
  payload: Joi.object({ approval_id: Joi.string().max(64).required() }),
  async run(deps, payload, job) {
    return outboxTransaction(deps, async (tx) => {
      const [approval] = await tx.select().from(approvals)
        .where(and(eq(approvals.id, payload.approval_id), eq(approvals.accountId, job.accountId)));
      if (!approval || approval.status !== 'approved' || approval.jobId !== job.id) {
        return { deleted: false, reason: 'approval_not_approved' };
      }
      // Approved maybe a while ago: the approver must still be able to do it (seat, role, channel).
      await assertDeciderStillMay(tx, approval);
      const target = approval.target as { channel_id: string; ts: string };
      const tsMicros = parseTs(target.ts);
      const [channel] = await tx.select().from(channels).where(and(eq(channels.id, target.channel_id), eq(channels.accountId, job.accountId)));
      const [message] = channel
        ? await tx.select().from(messages).where(and(eq(messages.channelId, channel.id), eq(messages.tsMicros, tsMicros))).for('update')
        : [];
      if (!channel || !message) return { deleted: false, reason: 'already_gone', channel_id: target.channel_id, ts: target.ts };
      await performMessageDelete(tx, { channel, message, deletedBy: approval.requestedByIdentityId, approvalId: approval.id });
      return { deleted: true, channel_id: target.channel_id, ts: target.ts };
    });
  },
});
