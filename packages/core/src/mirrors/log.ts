import { and, desc, eq, inArray, lt, mirrorDeliveries, sql, type Executor } from '@teamchat/db';

export type MirrorDeliveryRow = typeof mirrorDeliveries.$inferSelect;

/**
 * One entry of GET .../mirrors/{mirrorId}/deliveries: one attempt to send one message, with the
 * webhook delivery log's statuses and fields. The message itself is not shown (an admin reading
 * the log may not be a member of the channels it quotes); `line_count` says how many lines it held.
 */
export function toMirrorDeliveryView(r: MirrorDeliveryRow) {
  return {
    id: r.id,
    kind: r.kind,
    attempt: r.attempt,
    status: r.status,
    line_count: r.lineCount,
    next_retry_at: r.nextRetryAt?.toISOString() ?? null,
    response_status: r.responseStatus,
    latency_ms: r.latencyMs,
    error: r.error,
    created_at: r.createdAt.toISOString(),
    attempted_at: r.attemptedAt?.toISOString() ?? null,
  };
}

/** The mirror's delivery log, newest first, keyset-paged on seq. */
export async function listMirrorDeliveries(db: Executor, mirrorId: string, page: { limit: number; after: number | null }): Promise<MirrorDeliveryRow[]> {
  return db
    .select()
    .from(mirrorDeliveries)
    .where(and(eq(mirrorDeliveries.mirrorId, mirrorId), page.after === null ? undefined : lt(mirrorDeliveries.seq, page.after)))
    .orderBy(desc(mirrorDeliveries.seq))
    .limit(page.limit + 1);
}

/** Closes the mirror's open sends (`pending`, `retrying`) as `dead` with `error`; a drop is not an attempt (attempted_at stays as it was). */
export async function dropOpenMirrorSends(tx: Executor, mirrorId: string, error: string): Promise<number> {
  const out = await tx
    .update(mirrorDeliveries)
    .set({ status: 'dead', error, nextRetryAt: null })
    .where(and(eq(mirrorDeliveries.mirrorId, mirrorId), inArray(mirrorDeliveries.status, ['pending', 'retrying'])))
    .returning({ id: mirrorDeliveries.id });
  return out.length;
}

/** Retention (the webhook log's 30 days): deletes closed sends older than `before`, in batches. */
export async function purgeMirrorLog(db: Executor, before: Date, batch = 5000): Promise<number> {
  const deleted = await db.execute(sql`
    DELETE FROM mirror_deliveries WHERE id IN (
      SELECT id FROM mirror_deliveries WHERE created_at < ${before} AND status NOT IN ('pending', 'retrying') LIMIT ${batch})`);
  return deleted.rowCount ?? 0;
}
