import { credentials, and, eq } from '@teamchat/db';
import { AppError, createApiKey, errors, isManager, revokeCredential } from '@teamchat/core';
import { creating } from '../http/create';
import { actorOf, depsOf, locals } from '../http/locals';
import type { HandlerMap } from './handlers';

/**
 * The API keys page's writes (docs/web.md, "API keys"): a signed-in person creates a key for their
 * own seat, with scopes up to their role (the role check is core's), shown once; and revokes one.
 * Web session only: a credential never mints or revokes keys (it could otherwise mint a key
 * broader than itself, or lock its owner out); the operator CLI does the same for scripts.
 */
export const apiKeysHandlers = {
  createApiKey: creating(async ({ tx, actor, body, deps }) => {
    const expiresAt = body.expires_in_days ? new Date(deps.now().getTime() + body.expires_in_days * 86_400_000) : undefined;
    const out = await createApiKey(tx, {
      accountId: actor.accountId, userId: actor.userId, identityId: actor.identityId, role: actor.role,
      scopes: body.scopes, readOnly: body.read_only, expiresAt, actor,
    });
    return {
      status: 201,
      body: { id: out.key_id, key: out.key, scopes: out.scopes, read_only: body.read_only, expires_at: expiresAt?.toISOString() ?? null },
      // The key is shown once: an Idempotency-Key replay answers without it.
      storedBody: { id: out.key_id, scopes: out.scopes, read_only: body.read_only, expires_at: expiresAt?.toISOString() ?? null },
    };
  }),

  revokeApiKey: async (req, res) => {
    const deps = depsOf(req);
    const actor = actorOf(res);
    const keyId = locals(res).valid.params.keyId as string;
    await deps.database.db.transaction(async (tx) => {
      const [row] = await tx.select({ userId: credentials.userId }).from(credentials)
        .where(and(eq(credentials.id, keyId), eq(credentials.accountId, actor.accountId)));
      if (!row) throw errors.notFound('API key');
      // A member revokes only their own seat's keys and agents; owners and admins any of the account.
      if (row.userId !== actor.userId && !isManager(actor.role)) {
        throw new AppError('forbidden', 'Only an owner or admin may revoke another person’s key.', { reason: 'role' });
      }
      await revokeCredential(tx, { accountId: actor.accountId, credentialId: keyId, actor });
    });
    res.json({ ok: true, id: keyId });
  },
} satisfies HandlerMap;
