import type { MirrorHealth } from './health';
import type { MirrorRow } from './load';

/** A mirror as the API shows it, built field by field (no internal column leaks). */
export function toMirrorView(row: MirrorRow, health: MirrorHealth | null) {
  return {
    id: row.id,
    url: row.url,
    channels: [...row.channelIds],
    format: row.format,
    enabled: row.enabled,
    disabled_reason: row.enabled ? null : row.disabledReason,
    created_by: row.createdByUserId,
    created_at: row.createdAt.toISOString(),
    health,
  };
}

export type MirrorView = ReturnType<typeof toMirrorView>;
