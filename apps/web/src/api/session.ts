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
/** sessionStorage: set when the session ended under this tab (`sessionEnded`) */
const ENDED_KEY = 'teamchat.sessionEnded';
type Listener = (s: StoredSession | null) => void;
const listeners = new Set<Listener>();

export function currentSession(): StoredSession | null {
  try {
    const raw = localStorage.getItem(KEY);
    if (!raw) return null;
    const s = JSON.parse(raw) as StoredSession;
    if (new Date(s.expiresAt).getTime() > Date.now()) return s;
    // the session ran out while the app was open (its cookie expired with it): Sign in says so
    markSessionEnded();
    return null;
  } catch {
    return null;
  }
}

/**
 * Whether a session is stored, expired or not: a 401 forgets it (and tells the app) even once its
 * stored expiry has passed, which currentSession already reads as none.
 */
export function hasStoredSession(): boolean {
  try {
    return localStorage.getItem(KEY) !== null;
  } catch {
    return false;
  }
}

/**
 * Stores (or forgets) the session. `ended`: it is forgotten because the API refused it (a 401),
 * not because the person signed out here; Sign in then says "You were signed out" (`sessionEnded`).
 */
export function saveSession(s: StoredSession | null, options: { ended?: boolean } = {}): void {
  if (s) localStorage.setItem(KEY, JSON.stringify(s));
  else localStorage.removeItem(KEY);
  if (!s && options.ended) markSessionEnded();
  else clearSessionEnded();
  for (const l of listeners) l(s);
}

/**
 * The session ended without this tab signing out (a 401 from the API: signed out in another tab,
 * expired, revoked): Sign in then says so. Kept in sessionStorage (this tab only) until the next
 * sign-in or sign-out.
 */
function markSessionEnded(): void {
  try {
    sessionStorage.setItem(ENDED_KEY, '1');
  } catch {
    // storage refused: Sign in shows without the note
  }
}

export function sessionEnded(): boolean {
  try {
    return sessionStorage.getItem(ENDED_KEY) === '1';
  } catch {
    return false;
  }
}

function clearSessionEnded(): void {
  try {
    sessionStorage.removeItem(ENDED_KEY);
  } catch {
    // nothing to clear
  }
}

// Signed out in another tab: its sign-out removes the stored session, which this tab hears.
if (typeof window !== 'undefined') {
  window.addEventListener('storage', (e) => {
    if (e.key !== KEY) return;
    if (e.oldValue && !e.newValue) {
      markSessionEnded();
      // the app forgets what the ended session read (main.tsx clears its cache)
      for (const l of listeners) l(null);
    } else if (e.newValue) clearSessionEnded();
  });
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
