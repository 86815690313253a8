import type { Mirror, MirrorHealth } from '../../api/types';
import { MIRROR_FORMATS } from './MirrorForm';

/** How a mirror's format and health read on its pages. */
export const formatName = (f: string) => MIRROR_FORMATS.find(([v]) => v === f)?.[1] ?? f;

/** A mirror's health; the API answers null for a mirror it has none for yet, which reads as nothing sent. */
const NOTHING_SENT: MirrorHealth = { last_success_at: null, last_failure_at: null, success_rate_24h: null, attempts_24h: 0, pending_count: 0, paused_until: null };
export const healthOf = (m: Mirror): MirrorHealth => m.health ?? NOTHING_SENT;

export function rate(h: MirrorHealth): string {
  return h.success_rate_24h === null ? '—' : `${Math.round(h.success_rate_24h * 100)} % of ${h.attempts_24h} sends`;
}

/**
 * A pause worth showing: longer than the one-message-per-second pace, so the receiver named it
 * (a 429's Retry-After). The pace's own second after every send is not news.
 */
export function waitsForReceiver(pausedUntil: string | null): boolean {
  return pausedUntil !== null && Date.parse(pausedUntil) - Date.now() > 2_000;
}

