import { and, files, inArray, eq, type Executor } from '@teamchat/db';
import { errors } from '../errors';
import type { Attachment } from '../messaging/content';
import type { Actor } from '../principal';
import { fileVisibleTo } from './visibility';

/**
 * Resolves a message's file attachments (`{"file_id"}`): each file must be ready, of the same
 * account, and visible to the poster (uploaded by them or attached where they are a member);
 * otherwise 400 invalid_request naming the field (`attachments.N.file_id`). A file attachment is
 * stored as the file's name, size and content type at the time of posting (docs/api.md "Files");
 * link attachments (`url`) pass unchanged. No query when there is no file attachment.
 */
export async function resolveAttachments(db: Executor, actor: Actor, attachments: Attachment[] | undefined): Promise<Attachment[] | undefined> {
  if (!attachments) return attachments;
  const ids = [...new Set(attachments.flatMap((a) => (a.file_id ? [a.file_id] : [])))];
  if (ids.length === 0) return attachments;
  const rows = await db.select({ id: files.id, name: files.name, size: files.size, contentType: files.contentType })
    .from(files)
    .where(and(inArray(files.id, ids), eq(files.accountId, actor.accountId), eq(files.state, 'ready'), fileVisibleTo(actor.identityId)));
  const found = new Map(rows.map((r) => [r.id, r]));
  return attachments.map((a, i) => {
    if (!a.file_id) return a;
    const f = found.get(a.file_id);
    if (!f) {
      throw errors.invalid(`attachments.${i}.file_id: no ready file with this id that you may attach.`, { field: `attachments.${i}.file_id` });
    }
    return { file_id: f.id, name: f.name, size: f.size, content_type: f.contentType, ...(a.title ? { title: a.title } : {}) };
  });
}

/** The file ids a message's attachments name (what message_files records). */
export function attachedFileIds(attachments: unknown): string[] {
  if (!Array.isArray(attachments)) return [];
  return [...new Set(attachments.flatMap((a: { file_id?: unknown }) => (typeof a?.file_id === 'string' ? [a.file_id] : [])))];
}
