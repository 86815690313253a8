import { useQuery } from '@tanstack/react-query';
import { client, unwrap, type Page } from '../../api/client';
import { useRole, useSession } from '../../api/hooks';

export interface Identity {
  id: string;
  kind: 'person' | 'agent';
  name: string;
  user_id: string | null;
  created_at: string;
}

/** Pages of 200 read for the identities list: the account's first 5,000 people and agents. */
const IDENTITY_PAGES = 25;

/**
 * The account's identities (people and agents), every page up to IDENTITY_PAGES, one query
 * shared by every page that names them or finds the viewer among them: a person created after
 * the first page must still find themselves (their Edit, Delete, reactions).
 */
export function useIdentities(accountId: string) {
  return useQuery({
    queryKey: ['identities', accountId],
    queryFn: async (): Promise<Page<Identity>> => {
      const data: Identity[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < IDENTITY_PAGES; i += 1) {
        const page = await unwrap(client.GET<Page<Identity>>('/accounts/{accountId}/identities', {
          params: { path: { accountId }, query: { limit: 200, cursor } },
        }));
        data.push(...page.data);
        if (!page.next_cursor) return { data, next_cursor: null };
        cursor = page.next_cursor;
      }
      return { data, next_cursor: cursor ?? null };
    },
  });
}

/** Identity id → name, for authors (people and agents); ids stand in until it loads. */
export function useIdentityNames(accountId: string): Map<string, string> {
  const q = useIdentities(accountId);
  return new Map((q.data?.data ?? []).map((i) => [i.id, i.name]));
}

export interface Viewer {
  /** the signed-in person's identity in this account, found by the session's user id */
  identityId: string | undefined;
  /** an owner or an admin */
  isManager: boolean;
}

/** Who is looking. Used only to choose what to offer; the API decides. */
export function useViewer(accountId: string): Viewer {
  const userId = useSession()?.user.id;
  const role = useRole(accountId);
  const identities = useIdentities(accountId);
  const identityId = (identities.data?.data ?? []).find((i) => i.kind === 'person' && i.user_id === userId)?.id;
  return { identityId, isManager: role === 'owner' || role === 'admin' };
}
