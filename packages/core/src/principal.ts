import type { Role } from './scopes';

export type Via = 'api_key' | 'agent_token' | 'web_session';

/** Who is calling, as established by authentication (before the account is known). */
export interface Principal {
  via: Via;
  /** credential id or session id: what cursors are bound to */
  id: string;
  /** the person whose seat the call spends */
  userId: string;
  /** credentials only: the one account they act in, the identity they act as, their scopes */
  accountId?: string;
  identityId?: string;
  scopes?: readonly string[];
  readOnly: boolean;
  /** credentials only: when it stops working (null: never); what it mints expires no later */
  expiresAt?: Date | null;
}

/** The caller inside one account: role, acting identity and effective scopes resolved. */
export interface Actor {
  principal: Principal;
  accountId: string;
  userId: string;
  identityId: string;
  role: Role;
  scopes: ReadonlySet<string>;
  requestId?: string;
}

export function isWebSession(actor: Actor): boolean {
  return actor.principal.via === 'web_session';
}
