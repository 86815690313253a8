import { useState, type FormEvent } from 'react';
import { Navigate, useNavigate, useSearchParams } from 'react-router';
import { client } from '../api/client';
import { useSession } from '../api/hooks';
import { saveSession, sessionEnded, type AccountSummary } from '../api/session';
import { formatSeconds } from '../components/ui';

interface SignInAnswer {
  csrf_token: string;
  expires_at: string;
  user: { id: string; email: string };
  accounts: AccountSummary[];
}

/** The app's own pages (routes.tsx): `/accounts…` and `/a/{accountId}/…`. */
const APP_PATH = /^\/(?:accounts(?:\/|$)|a\/[^/]+(?:\/|$))/;

/**
 * `next` as a path of this app (path, query, hash), or null: it is parsed as the browser would
 * resolve it, so `/\example.com`, `//example.com`, `https://…` or `javascript:` (another origin,
 * or none) are refused rather than handed to the router, which would throw on them.
 */
export function safeNext(next: string | null): string | null {
  if (!next) return null;
  let url: URL;
  try {
    url = new URL(next, window.location.origin);
  } catch {
    return null;
  }
  if (url.origin !== window.location.origin || !APP_PATH.test(url.pathname)) return null;
  return url.pathname + url.search + url.hash;
}

/** Where to go after sign-in: the page asked for (a page of this app only), else the one account or the picker. */
function landing(accounts: AccountSummary[], next: string | null): string {
  return safeNext(next) ?? (accounts.length === 1 ? `/a/${accounts[0]!.id}/channels` : '/accounts');
}

export function SignInPage() {
  const session = useSession();
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // read once: signing in (or out) clears it
  const [ended] = useState(sessionEnded);
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
      {ended && (
        <p role="status" className="warning">
          You were signed out. Sign in again to continue.
        </p>
      )}
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

