import { useSyncExternalStore } from 'react';
import { useParams } from 'react-router';
import { currentSession, onSessionChange, type StoredSession } from './session';

let cached: StoredSession | null = currentSession();
let cachedRaw = JSON.stringify(cached);
function snapshot(): StoredSession | null {
  const now = currentSession();
  const raw = JSON.stringify(now);
  if (raw !== cachedRaw) {
    cached = now;
    cachedRaw = raw;
  }
  return cached;
}
function subscribe(cb: () => void): () => void {
  const off = onSessionChange(cb);
  window.addEventListener('storage', cb);
  return () => {
    off();
    window.removeEventListener('storage', cb);
  };
}

/** The signed-in session (null when signed out), re-rendering on sign-in, sign-out and in other tabs. */
export function useSession(): StoredSession | null {
  return useSyncExternalStore(subscribe, snapshot);
}

export function useAccountId(): string {
  const { accountId } = useParams();
  if (!accountId) throw new Error('no account in the path');
  return accountId;
}

/** The signed-in person's role in the account (display only: the API decides). */
export function useRole(accountId: string): string | undefined {
  return useSession()?.accounts.find((a) => a.id === accountId)?.role;
}
