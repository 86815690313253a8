import { useState, type FormEvent } from 'react';
import { Navigate, useNavigate, useSearchParams } from 'react-router';
import { client } from '../api/client';
import { useSession } from '../api/hooks';
import { saveSession, type AccountSummary } from '../api/session';
import { formatSeconds } from '../components/ui';

interface SignInAnswer {
  csrf_token: string;
  expires_at: string;
  user: { id: string; email: string };
  accounts: AccountSummary[];
}

/** Where to go after sign-in: the page asked for (same origin only), else the one account or the picker. */
function landing(accounts: AccountSummary[], next: string | null): string {
  if (next && next.startsWith('/') && !next.startsWith('//')) return next;
  return accounts.length === 1 ? `/a/${accounts[0]!.id}/channels` : '/accounts';
}

export function SignInPage() {
  const session = useSession();
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  if (session) return <Navigate replace to={landing(session.accounts, params.get('next'))} />;

  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const { data, error: err, response } = await client.POST<SignInAnswer>('/auth/sign-in', { body: { email, password } });
    setBusy(false);
    if (err) {
      const ra = response.headers.get('retry-after');
      setError(err.error.message + (response.status === 429 && ra ? ` Try again in ${formatSeconds(Number(ra))}.` : ''));
      return;
    }
    const s = data;
    // The session token is also in the answer; the app keeps only the cookie (HttpOnly) and the CSRF token.
    saveSession({ csrfToken: s.csrf_token, expiresAt: s.expires_at, user: s.user, accounts: s.accounts });
    void navigate(landing(s.accounts, params.get('next')), { replace: true });
  }

  return (
    <main id="main" className="signin">
      <h1>Sign in to teamchat</h1>
      <form onSubmit={(e) => void submit(e)} aria-describedby={error ? 'signin-error' : undefined}>
        <label>
          Email
          <input type="email" name="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} />
        </label>
        <label>
          Password
          <input type="password" name="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
        </label>
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        {error && (
          <p role="alert" id="signin-error" className="error">
            {error}
          </p>
        )}
      </form>
    </main>
  );
}

