import { and, eq, isNull, mirrors, type Executor } from '@teamchat/db';
import { errors } from '../errors';

export type MirrorRow = typeof mirrors.$inferSelect;

/** A live (not deleted) mirror of the account, or 404 not_found; `forUpdate` locks the row. */
export async function loadMirror(db: Executor, accountId: string, mirrorId: string, options: { forUpdate?: boolean } = {}): Promise<MirrorRow> {
  const query = db.select().from(mirrors).where(and(eq(mirrors.id, mirrorId), eq(mirrors.accountId, accountId), isNull(mirrors.deletedAt)));
  const [row] = options.forUpdate ? await query.for('update') : await query;
  if (!row) throw errors.notFound('mirror');
  return row;
}
