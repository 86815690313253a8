import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link, Navigate, NavLink, Outlet, useLocation, useMatches, useNavigate } from 'react-router';
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

/** A route's `handle`: the page's name, for the document title ("Channels · teamchat"). */
export interface RouteHandle {
  title?: string;
}

export function documentTitle(title: string | undefined): string {
  return title ? `${title} · teamchat` : 'teamchat';
}

/** The document title follows the page: the deepest matched route's `handle.title`, set here once for every route. */
export function TitledOutlet() {
  const matches = useMatches();
  const session = useSession();
  const accountId = matches.find((m) => m.params.accountId)?.params.accountId;
  const handle = [...matches].reverse().find((m) => (m.handle as RouteHandle | undefined)?.title)?.handle as RouteHandle | undefined;
  // an account the person has no seat in shows only its not-found state (Layout), so the title says so
  const title = accountId && session && !session.accounts.some((a) => a.id === accountId) ? 'Account not found' : handle?.title;
  useEffect(() => {
    document.title = documentTitle(title);
  }, [title]);
  return <Outlet />;
}

export function Layout() {
  const session = useSession();
  const accountId = useAccountId();
  const location = useLocation();
  // Narrow screens: the navigation is a disclosure behind "Menu" (styles.css hides it until opened).
  const [menuOpen, setMenuOpen] = useState(false);
  const menuButton = useRef<HTMLButtonElement>(null);
  const nav = useRef<HTMLElement>(null);
  useEffect(() => {
    if (menuOpen) nav.current?.querySelector<HTMLElement>('a')?.focus();
  }, [menuOpen]);
  if (!session) return <Navigate replace to={`/?next=${encodeURIComponent(location.pathname + location.search)}`} />;
  const account = session.accounts.find((a) => a.id === accountId);
  const closeMenu = (e: KeyboardEvent) => {
    if (e.key === 'Escape' && menuOpen) {
      e.preventDefault();
      setMenuOpen(false);
      menuButton.current?.focus();
    }
  };
  if (!account) return <AccountNotFound many={session.accounts.length > 0} email={session.user.email} />;
  return (
    <div className={menuOpen ? 'shell menu-open' : 'shell'}>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <button
          ref={menuButton}
          type="button"
          className="menu-toggle"
          aria-expanded={menuOpen}
          aria-controls="main-nav"
          onClick={() => setMenuOpen((o) => !o)}
          onKeyDown={closeMenu}
        >
          Menu
        </button>
        <span className="brand">teamchat</span>
        <span className="account-name">{`${account.name} · ${account.role}`}</span>
        {session.accounts.length > 1 && <NavLink to="/accounts">Switch account</NavLink>}
        <span className="user">{session.user.email}</span>
        <SignOutButton />
      </header>
      {account.state !== 'active' && (
        <p className="banner" role="status">
          {ACCOUNT_STATES[account.state] ?? account.state}
        </p>
      )}
      <div className="body">
        <nav
          aria-label="Main"
          id="main-nav"
          ref={nav}
          onKeyDown={closeMenu}
          onClick={(e) => {
            // a link followed from the open menu closes it; focus goes to the page (the link is hidden now)
            if (menuOpen && (e.target as HTMLElement).closest('a')) {
              setMenuOpen(false);
              document.getElementById('main')?.focus();
            }
          }}
        >
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

/** An account the signed-in person has no seat in (or that does not exist): no navigation, no raw id, a way out. */
function AccountNotFound({ many, email }: { many: boolean; email: string }) {
  return (
    <div className="shell">
      <header className="top">
        <span className="brand">teamchat</span>
        <span className="user">{email}</span>
        <SignOutButton />
      </header>
      <main id="main" tabIndex={-1} className="standalone">
        <h1>Account not found</h1>
        <p>This account does not exist, or you have no seat in it. If you were added to it just now, sign out and sign in again.</p>
        {many && (
          <p>
            <Link to="/accounts">Choose an account</Link>
          </p>
        )}
      </main>
    </div>
  );
}
