import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { client, unwrap, type Page } from '../api/client';
import { useAccountId, useRole } from '../api/hooks';
import { scopesFor } from '../api/vocabulary';
import { ConfirmButton, ErrorNote, formatTime, SecretDialog } from '../components/ui';

interface Credential {
  id: string;
  kind: 'api_key' | 'agent_token';
  prefix: string;
  scopes: string[];
  read_only: boolean;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
}

export function ScopeChecks({ role, value, onChange }: { role: string | undefined; value: string[]; onChange: (v: string[]) => void }) {
  return (
    <fieldset>
      <legend>Scopes</legend>
      <p className="muted small">channels:read and channels:write are always granted (a read-only credential drops channels:write).</p>
      <div className="checks">
        {scopesFor(role).map((s) => (
          <label key={s} className="check">
            <input type="checkbox" checked={value.includes(s)} onChange={(e) => onChange(e.target.checked ? [...value, s] : value.filter((x) => x !== s))} />
            {s}
          </label>
        ))}
      </div>
    </fieldset>
  );
}

export function ApiKeysPage() {
  const accountId = useAccountId();
  const role = useRole(accountId);
  const qc = useQueryClient();
  const [scopes, setScopes] = useState<string[]>([]);
  const [readOnly, setReadOnly] = useState(false);
  const [expiresIn, setExpiresIn] = useState('');
  const [secret, setSecret] = useState<string | null>(null);
  const key = ['api-keys', accountId];
  const list = useQuery({
    queryKey: key,
    queryFn: () => unwrap(client.GET<Page<Credential>>('/accounts/{accountId}/api-keys', { params: { path: { accountId }, query: { limit: 200 } } })),
  });
  const create = useMutation({
    mutationFn: () =>
      unwrap(client.POST<{ key: string }>('/accounts/{accountId}/api-keys', { params: { path: { accountId } }, body: { scopes, read_only: readOnly, ...(expiresIn ? { expires_in_days: Number(expiresIn) } : {}) } })),
    onSuccess: (r) => {
      setSecret(r.key);
      setScopes([]);
      void qc.invalidateQueries({ queryKey: key });
    },
  });
  const revoke = useMutation({
    mutationFn: (keyId: string) => unwrap(client.POST('/accounts/{accountId}/api-keys/{keyId}/revoke', { params: { path: { accountId, keyId } } })),
    onSuccess: () => void qc.invalidateQueries({ queryKey: key }),
  });
  return (
    <>
      <h1>API keys</h1>
      <form
        className="panel"
        aria-label="Create API key"
        onSubmit={(e: FormEvent) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <ScopeChecks role={role} value={scopes} onChange={setScopes} />
        <label className="check">
          <input type="checkbox" checked={readOnly} onChange={(e) => setReadOnly(e.target.checked)} />
          Read-only
        </label>
        <label>
          Expires after
          <select value={expiresIn} onChange={(e) => setExpiresIn(e.target.value)}>
            <option value="">Never</option>
            <option value="7">7 days</option>
            <option value="30">30 days</option>
            <option value="90">90 days</option>
            <option value="365">1 year</option>
          </select>
        </label>
        <button type="submit" disabled={create.isPending}>
          Create key
        </button>
        <ErrorNote error={create.error} />
      </form>
      <SecretDialog title="New API key" secret={secret} onClose={() => setSecret(null)} />
      <ErrorNote error={list.error ?? revoke.error} />
      <table>
        <caption className="sr-only">API keys and agent tokens</caption>
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Kind</th>
            <th scope="col">Scopes</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">State</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {(list.data?.data ?? []).map((c) => (
            <tr key={c.id}>
              <td>
                <code>{c.prefix}…</code>
              </td>
              <td>{c.kind === 'api_key' ? 'API key' : 'agent token'}</td>
              <td className="small">{c.scopes.join(', ')}</td>
              <td>{formatTime(c.created_at)}</td>
              <td>{formatTime(c.last_used_at)}</td>
              <td>{c.revoked_at ? `revoked ${formatTime(c.revoked_at)}` : c.read_only ? 'active, read-only' : 'active'}</td>
              <td>{!c.revoked_at && <ConfirmButton label="Revoke" question={`Revoke ${c.prefix}…? Programs using it stop working at once.`} onConfirm={() => revoke.mutate(c.id)} />}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
