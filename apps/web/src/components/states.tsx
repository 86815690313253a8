/** Every state the spec defines, with its meaning in plain words (one table, used by every page). */
export const ENDPOINT_REASONS: Record<string, string> = {
  awaiting_enable: 'Registered or changed by a credential; an owner or admin must enable it here before anything is sent.',
  failing: 'Every delivery failed for 24 hours, so it was turned off. Fix the receiver, then enable it.',
  gone: 'The receiver answered 410 Gone, so it was turned off.',
  slow: 'The median answer time of the last 50 deliveries was above 2 seconds, so it was turned off.',
  manual: 'An owner or admin turned it off.',
};

/** A mirror's `disabled_reason` (docs/mirrors.md). */
export const MIRROR_REASONS: Record<string, string> = {
  manual: 'An owner or admin turned it off (or created it off). Nothing is sent until it is enabled.',
  gone: 'The other tool answered 410 Gone (the incoming webhook was removed), so it was turned off.',
  failing: 'Every send failed for 24 hours, so it was turned off. Check the URL, then enable it.',
};

export function MirrorBadge({ enabled, reason }: { enabled: boolean; reason: string | null }) {
  if (enabled) return <span className="badge ok">enabled</span>;
  const word = reason ?? 'disabled';
  return (
    <span className="badge bad" title={MIRROR_REASONS[word]}>
      {word}
    </span>
  );
}

export const DELIVERY_STATUSES: Record<string, string> = {
  pending: 'Queued, not yet attempted.',
  delivered: 'The receiver answered 2xx in time.',
  retrying: 'Waiting for its next attempt (or for the seat’s daily call units to reset).',
  failed: 'The last attempt failed; a retry is scheduled (a test event is never retried).',
  dead: 'Every retry failed; it can be replayed.',
};

export const ACCOUNT_STATES: Record<string, string> = {
  active: 'Active.',
  read_only: 'Read-only: every request to this account is refused until an operator makes it active again.',
  suspended: 'Suspended: every request to this account is refused.',
};

export function EndpointBadge({ enabled, reason }: { enabled: boolean; reason: string | null }) {
  if (enabled) return <span className="badge ok">enabled</span>;
  const word = reason ?? 'disabled';
  return (
    <span className={`badge ${word === 'awaiting_enable' ? 'warn' : 'bad'}`} title={ENDPOINT_REASONS[word]}>
      {word}
    </span>
  );
}

export function DeliveryBadge({ status }: { status: string }) {
  const cls = status === 'delivered' ? 'ok' : status === 'dead' || status === 'failed' ? 'bad' : 'warn';
  return (
    <span className={`badge ${cls}`} title={DELIVERY_STATUSES[status]}>
      {status}
    </span>
  );
}
