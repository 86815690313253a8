import type { files } from '@teamchat/db';

export type FileRow = typeof files.$inferSelect;

/** The ONE shape of a file in the API (never its storage key). */
export function toFileView(row: FileRow) {
  return {
    id: row.id,
    name: row.name,
    size: row.size,
    content_type: row.contentType,
    state: row.state,
    sha256: row.sha256,
    uploaded_by: row.uploadedByIdentityId,
    created_at: row.createdAt.toISOString(),
    completed_at: row.completedAt ? row.completedAt.toISOString() : null,
  };
}

export type FileView = ReturnType<typeof toFileView>;
