import { useQuery } from '@tanstack/react-query';
import { client, unwrap, type Page } from '../../api/client';
import { useSession } from '../../api/hooks';

export interface Identity {
  id: string;
  kind: 'person' | 'agent';
  name: string;
  user_id: string | null;
  created_at: string;
}

/** The account's identities (people and agents), one query shared by every page that names them. */
export function useIdentities(accountId: string) {
  return useQuery({
    queryKey: ['identities', accountId],
    queryFn: () => unwrap(client.GET<Page<Identity>>('/accounts/{accountId}/identities', { params: { path: { accountId }, query: { limit: 200 } } })),
  });
}

/**
 * Who is looking: the signed-in person's identity in this account (their person identity, found
 * by the session's user id) and their role. Used only to choose what to offer; the API decides.
 */
export function useViewer(accountId: string): { identityId: string | undefined; role: string | undefined; isManager: boolean } {
  const session = useSession();
  const identities = useIdentities(accountId);
  const userId = session?.user.id;
  const role = session?.accounts.find((a) => a.id === accountId)?.role;
  const identityId = (identities.data?.data ?? []).find((i) => i.kind === 'person' && i.user_id === userId)?.id;
  return { identityId, role, isManager: role === 'owner' || role === 'admin' };
}
