import { useQuery } from '@tanstack/react-query';
import { ApiError, client, unwrap } from '../../api/client';
import type { Channel } from '../../api/types';

/**
 * The channel a deep link names: from the list when it is there, else asked for by id (a list
 * holds 200), so a bogus id shows only "not found" and a channel one is not in says so.
 */
export function useChannelLookup(accountId: string, channelId: string | undefined, listed: Channel[] | undefined) {
  const fromList = channelId ? listed?.find((c) => c.id === channelId) : undefined;
  const one = useQuery({
    enabled: Boolean(channelId && listed && !fromList),
    queryKey: ['channel', accountId, channelId],
    queryFn: () => unwrap(client.GET<Channel>('/accounts/{accountId}/channels/{channelId}', { params: { path: { accountId, channelId: channelId ?? '' } } })),
  });
  const channel = fromList ?? one.data;
  const code = one.error instanceof ApiError ? one.error.body.code : undefined;
  return { channel, notFound: code === 'not_found', notMember: code === 'not_a_member', error: code === 'not_found' || code === 'not_a_member' ? null : one.error };
}

