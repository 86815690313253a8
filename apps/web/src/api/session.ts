/**
 * What the app remembers of a sign-in, in localStorage so a new tab (an approval link followed
 * from an email or an agent) is signed in too. It holds no credential: the session itself is the
 * HttpOnly cookie; the CSRF token only proves a write came from this origin, and is useless
 * without the cookie.
 */
export interface AccountSummary {
  id: string;
  name: string;
  role: string;
  plan: string;
  state: string;
}

export interface StoredSession {
  csrfToken: string;
  expiresAt: string;
  user: { id: string; email: string };
  accounts: AccountSummary[];
}

const KEY = 'teamchat.session';
type Listener = (s: StoredSession | null) => void;
const listeners = new Set<Listener>();

export function currentSession(): StoredSession | null {
  try {
    const raw = localStorage.getItem(KEY);
    if (!raw) return null;
    const s = JSON.parse(raw) as StoredSession;
    return new Date(s.expiresAt).getTime() > Date.now() ? s : null;
  } catch {
    return null;
  }
}

export function saveSession(s: StoredSession | null): void {
  if (s) localStorage.setItem(KEY, JSON.stringify(s));
  else localStorage.removeItem(KEY);
  for (const l of listeners) l(s);
}

export function onSessionChange(l: Listener): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}

/**
 * Keeps the header's account state current between sign-ins: a `403 read_only` or `suspended`
 * from a route under an account marks it so (the banner shows its meaning); any success there
 * means it is active again. `url` is the called path, `/accounts/{id}/…`.
 */
export function observeAccountState(url: string, status: number, code: string | undefined): void {
  const m = /^\/accounts\/([^/?]+)/.exec(url);
  const s = currentSession();
  if (!m || !s) return;
  const accountId = decodeURIComponent(m[1]!);
  const next = status === 403 && (code === 'read_only' || code === 'suspended') ? code : status < 400 ? 'active' : null;
  const account = s.accounts.find((a) => a.id === accountId);
  if (!next || !account || account.state === next) return;
  saveSession({ ...s, accounts: s.accounts.map((a) => (a.id === accountId ? { ...a, state: next } : a)) });
}
