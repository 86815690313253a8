/**
 * The receiver's pace (docs/mirrors.md "Pace"): how long a 429 asks us to wait, from the
 * `Retry-After` header (seconds or an HTTP date) or Discord's JSON body `retry_after` (seconds,
 * fractional). Pure, so the rule is tested on its own.
 */

/** A receiver never pauses a mirror longer than this per answer (a hostile or broken value is capped). */
export const RETRY_AFTER_MAX_MS = 60 * 60_000;
/** A 429 that names no wait pauses the mirror this long. */
export const RETRY_AFTER_DEFAULT_MS = 5_000;

export function retryAfterMs(answer: { headers: Record<string, string | string[] | undefined>; body: string } | undefined, now: Date): number {
  const header = answer?.headers['retry-after'];
  const value = Array.isArray(header) ? header[0] : header;
  let ms: number | null = null;
  if (value !== undefined && value.trim() !== '') {
    const seconds = Number(value.trim());
    if (Number.isFinite(seconds)) ms = seconds * 1000;
    else {
      const at = Date.parse(value);
      if (Number.isFinite(at)) ms = at - now.getTime();
    }
  }
  if (ms === null && answer?.body) {
    try {
      const parsed = JSON.parse(answer.body) as { retry_after?: unknown };
      if (typeof parsed.retry_after === 'number' && Number.isFinite(parsed.retry_after)) ms = parsed.retry_after * 1000;
    } catch {
      // not JSON: no wait named
    }
  }
  if (ms === null || ms < 0) return RETRY_AFTER_DEFAULT_MS;
  return Math.min(Math.ceil(ms), RETRY_AFTER_MAX_MS);
}
