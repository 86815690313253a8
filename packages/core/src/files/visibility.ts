import { channelMembers, files, messageFiles, sql, type SQL } from '@teamchat/db';

/**
 * The ONE rule of who may see a file (its row, its bytes, attaching it): its uploader, or a
 * member of a channel or DM where a message attaches it. Anyone else is told it does not exist.
 */
export function fileVisibleTo(identityId: string): SQL {
  return sql`(${files.uploadedByIdentityId} = ${identityId} OR (${files.state} = 'ready' AND EXISTS (
    SELECT 1 FROM ${messageFiles} JOIN ${channelMembers}
        ON ${channelMembers.channelId} = ${messageFiles.channelId} AND ${channelMembers.identityId} = ${identityId}
     WHERE ${messageFiles.fileId} = ${files.id})))`;
}
