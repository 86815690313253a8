import { useQuery } from '@tanstack/react-query';
import { client, unwrap } from '../api/client';
import { useAccountId } from '../api/hooks';
import { ACCOUNT_STATES } from '../components/states';
import { ErrorNote, formatTime } from '../components/ui';

interface Use {
  limit: number;
  used: number | null;
  resets_at?: string | null;
}
interface Account {
  id: string;
  name: string;
  plan: string;
  state: string;
  seats: number;
  your_role: string;
  limits: { enforced: boolean; degraded: boolean; calls_per_minute: Use; units_per_day: Use; webhook_endpoints_per_seat: { limit: number; account_limit: number; used: number } };
}
interface Usage {
  plan: string;
  limits: { calls_per_minute: number; units_per_day: number };
  seats: Array<{ user_id: string; email: string; role: string; calls_this_minute: number | null; units_today: number | null }>;
  degraded: boolean;
}

function Bar({ label, used, limit }: { label: string; used: number | null; limit: number }) {
  return (
    <div className="meter">
      <meter min={0} max={limit} value={used ?? 0} aria-label={label} />
      <span className="small">
        {used === null ? 'unknown' : used.toLocaleString()} of {limit.toLocaleString()}
      </span>
    </div>
  );
}

export function AccountPage() {
  const accountId = useAccountId();
  const account = useQuery({
    queryKey: ['account', accountId],
    queryFn: () => unwrap(client.GET<Account>('/accounts/{accountId}', { params: { path: { accountId } } })),
  });
  const usage = useQuery({
    queryKey: ['usage', accountId],
    queryFn: () => unwrap(client.GET<Usage>('/accounts/{accountId}/usage', { params: { path: { accountId } } })),
  });
  const a = account.data;
  return (
    <>
      <h1>Account</h1>
      <ErrorNote error={account.error} />
      {a && (
        <dl className="facts">
          <dt>Name</dt>
          <dd>{a.name}</dd>
          <dt>Plan</dt>
          <dd>{a.plan}</dd>
          <dt>State</dt>
          <dd>
            {a.state} — {ACCOUNT_STATES[a.state]}
          </dd>
          <dt>Seats</dt>
          <dd>{a.seats}</dd>
          <dt>Webhook endpoints</dt>
          <dd>
            {a.limits.webhook_endpoints_per_seat.used} of {a.limits.webhook_endpoints_per_seat.account_limit} ({a.limits.webhook_endpoints_per_seat.limit} per seat)
          </dd>
        </dl>
      )}
      <h2>Today’s use</h2>
      <ErrorNote error={usage.error} />
      {usage.data?.degraded && <p role="status">Limits are counted per process while Redis is away; today’s units are unknown.</p>}
      {usage.data && (
        <table>
          <caption className="sr-only">Use per seat against the plan’s limits</caption>
          <thead>
            <tr>
              <th scope="col">Seat</th>
              <th scope="col">Calls this minute</th>
              <th scope="col">Call units today</th>
            </tr>
          </thead>
          <tbody>
            {usage.data.seats.map((s) => (
              <tr key={s.user_id}>
                <td>
                  {s.email} <span className="muted small">{s.role}</span>
                </td>
                <td>
                  <Bar label={`Calls per minute, ${s.email}`} used={s.calls_this_minute} limit={usage.data.limits.calls_per_minute} />
                </td>
                <td>
                  <Bar label={`Call units today, ${s.email}`} used={s.units_today} limit={usage.data.limits.units_per_day} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {a?.limits.units_per_day.resets_at && <p className="muted">Call units reset at {formatTime(a.limits.units_per_day.resets_at)}.</p>}
    </>
  );
}
