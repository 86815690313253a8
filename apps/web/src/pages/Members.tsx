import { useQuery } from '@tanstack/react-query';
import { client, unwrap, type Page } from '../api/client';
import { useAccountId } from '../api/hooks';
import { ErrorNote, formatTime } from '../components/ui';

interface Member {
  user_id: string;
  identity_id: string;
  email: string;
  role: string;
  joined_at: string;
}

/** The account's members (people with a seat), for their emails by user id. */
export function useMembers(accountId: string) {
  return useQuery({
    queryKey: ['members', accountId],
    queryFn: () => unwrap(client.GET<Page<Member>>('/accounts/{accountId}/members', { params: { path: { accountId }, query: { limit: 200 } } })),
  });
}

export function MembersPage() {
  const accountId = useAccountId();
  const list = useMembers(accountId);
  return (
    <>
      <h1>Members</h1>
      <p className="muted">
        People with a seat in this account. Roles are changed by an operator (<code>user:set-role</code>).
      </p>
      <ErrorNote error={list.error} />
      <table>
        <caption className="sr-only">Members and their roles</caption>
        <thead>
          <tr>
            <th scope="col">Email</th>
            <th scope="col">Role</th>
            <th scope="col">Since</th>
          </tr>
        </thead>
        <tbody>
          {(list.data?.data ?? []).map((m) => (
            <tr key={m.user_id}>
              <td>{m.email}</td>
              <td>{m.role}</td>
              <td>{formatTime(m.joined_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
