import { useState, type FormEvent } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { client, unwrap } from '../api/client';
import { useAccountId, useRole } from '../api/hooks';
import { ErrorNote, formatTime, SecretDialog } from '../components/ui';
import { ScopeChecks } from './ApiKeys';
import { useIdentities } from './messaging/viewer';

export function AgentsPage() {
  const accountId = useAccountId();
  const role = useRole(accountId);
  const qc = useQueryClient();
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>([]);
  const [token, setToken] = useState<string | null>(null);
  const key = ['identities', accountId];
  const list = useIdentities(accountId);
  const create = useMutation({
    mutationFn: () => unwrap(client.POST<{ token: string }>('/accounts/{accountId}/identities', { params: { path: { accountId } }, body: { name, scopes } })),
    onSuccess: (r) => {
      setToken(r.token);
      setName('');
      setScopes([]);
      void qc.invalidateQueries({ queryKey: key });
    },
  });
  const agents = (list.data?.data ?? []).filter((i) => i.kind === 'agent');
  return (
    <>
      <h1>Agents</h1>
      <form
        className="panel"
        aria-label="Register agent"
        onSubmit={(e: FormEvent) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <label>
          Agent name
          <input required maxLength={80} value={name} onChange={(e) => setName(e.target.value)} />
        </label>
        <ScopeChecks role={role} value={scopes} onChange={setScopes} />
        <button type="submit" disabled={create.isPending}>
          Register agent
        </button>
        <ErrorNote error={create.error} />
      </form>
      <SecretDialog title="Agent token" secret={token} note={<p>The agent acts with these scopes and spends your seat’s limits.</p>} onClose={() => setToken(null)} />
      <ErrorNote error={list.error} />
      {list.isSuccess && agents.length === 0 && <p>No agents yet.</p>}
      <ul className="cards">
        {agents.map((a) => (
          <li key={a.id}>
            <strong>{a.name}</strong> <span className="muted">registered {formatTime(a.created_at)}</span>
          </li>
        ))}
      </ul>
    </>
  );
}
