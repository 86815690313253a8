import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Navigate, NavLink, Outlet, useLocation, useNavigate } from 'react-router';
import { client } from '../api/client';
import { useAccountId, useSession } from '../api/hooks';
import { saveSession } from '../api/session';
import { ACCOUNT_STATES } from './states';

/** The main navigation; the link names are a contract (tests find them by role and name). */
export const NAV: Array<[string, string]> = [
  ['Channels', 'channels'],
  ['Direct messages', 'dms'],
  ['Webhooks', 'webhooks'],
  ['Mirrors', 'mirrors'],
  ['Files', 'files'],
  ['Search', 'search'],
  ['API keys', 'api-keys'],
  ['Agents', 'agents'],
  ['Approvals', 'approvals'],
  ['Audit log', 'audit'],
  ['Account', 'account'],
  ['Members', 'members'],
];

export function SignOutButton() {
  const navigate = useNavigate();
  const qc = useQueryClient();
  const signOut = useMutation({
    mutationFn: () => client.POST('/auth/sign-out'),
    onSettled: () => {
      saveSession(null);
      qc.clear();
      void navigate('/');
    },
  });
  return (
    <button type="button" onClick={() => signOut.mutate()} disabled={signOut.isPending}>
      Sign out
    </button>
  );
}

export function Layout() {
  const session = useSession();
  const accountId = useAccountId();
  const location = useLocation();
  if (!session) return <Navigate replace to={`/?next=${encodeURIComponent(location.pathname + location.search)}`} />;
  const account = session.accounts.find((a) => a.id === accountId);
  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">teamchat</span>
        <span className="account-name">{account ? `${account.name} · ${account.role}` : accountId}</span>
        {session.accounts.length > 1 && <NavLink to="/accounts">Switch account</NavLink>}
        <span className="user">{session.user.email}</span>
        <SignOutButton />
      </header>
      {account && account.state !== 'active' && (
        <p className="banner" role="status">
          {ACCOUNT_STATES[account.state] ?? account.state}
        </p>
      )}
      <div className="body">
        <nav aria-label="Main">
          <ul>
            {NAV.map(([name, path]) => (
              <li key={path}>
                <NavLink to={`/a/${accountId}/${path}`}>{name}</NavLink>
              </li>
            ))}
          </ul>
        </nav>
        <main id="main" tabIndex={-1}>
          <Outlet />
        </main>
      </div>
    </div>
  );
}
