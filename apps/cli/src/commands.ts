import Joi from 'joi';
import {
  ACCOUNT_STATES, ALL_SCOPES, AppError, EVENT_TYPES, MESSAGE_EVENT_TYPES, PASSWORD_MAX, PASSWORD_MIN, PLANS, ROLES, addMember, createAgent, createApiKey, ensureUser, openAccount, preparePerson,
  getMemberByEmail, parseDuration, recordAudit, requireAccount, revokeCredential, setAccountPlan, setAccountState, setMemberRole,
  type AccountState, type Plan, type Role,
} from '@teamchat/core';
import type { Db } from '@teamchat/db';
import { webhooksListen, type ListenIo, type ListenOptions } from './webhooks-listen';
import { demoReset } from './demo-reset';

export interface Command {
  summary: string;
  usage: string;
  options: Joi.ObjectSchema;
  switches?: string[];
  run?(db: Db, o: Record<string, any>): Promise<Record<string, unknown>>;
  /** refused when NODE_ENV=production, before anything is touched */
  developmentOnly?: boolean;
  /** a command that manages the database itself (main neither creates nor migrates it first) */
  manage?(databaseUrl: string, o: Record<string, any>, io: ListenIo): Promise<Record<string, unknown>>;
  /** a long-running command: prints as it goes (with --json, one JSON line per item) and returns when stopped */
  serve?(db: Db, o: Record<string, any>, io: ListenIo): Promise<void>;
}

const email = Joi.string().email({ tlds: false }).max(320);
const eventList = Joi.string().custom((value: string, helpers) => {
  const list = [...new Set(value.split(',').map((s) => s.trim()).filter(Boolean))];
  const unknown = list.filter((s) => !(EVENT_TYPES as readonly string[]).includes(s));
  if (unknown.length || list.length === 0) return helpers.message({ custom: `unknown event type(s): ${unknown.join(', ') || '(none given)'}; known: ${EVENT_TYPES.join(', ')}` });
  return list;
});
/** Where `--forward-to` may point: plain HTTP on this machine (the developer's app). */
const localHttpUrl = Joi.string().custom((value: string, helpers) => {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return helpers.message({ custom: '--forward-to must be a URL like http://localhost:8080/hook' });
  }
  if (u.protocol !== 'http:' || !['localhost', '127.0.0.1', '[::1]'].includes(u.hostname)) {
    return helpers.message({ custom: '--forward-to must be a plain-HTTP URL on this machine (http://localhost:PORT/...)' });
  }
  return value;
});
const password = Joi.string().min(PASSWORD_MIN).max(PASSWORD_MAX);
const accountId = Joi.string().pattern(/^acct_[a-z0-9]+$/).message('--account must be an account id (acct_...)');
const scopes = Joi.string()
  .custom((value: string, helpers) => {
    const list = value.split(',').map((s) => s.trim()).filter(Boolean);
    const unknown = list.filter((s) => !ALL_SCOPES.includes(s));
    if (unknown.length) return helpers.message({ custom: `unknown scope(s): ${unknown.join(', ')}` });
    return [...new Set(list)];
  });

async function memberOrFail(db: Db, account: string, who: string) {
  await requireAccount(db, account);
  const member = await getMemberByEmail(db, account, who);
  if (!member) throw new AppError('not_found', `${who} is not a member of ${account}.`);
  return member;
}

/** The operator commands: a stable contract (see README "Operator CLI"). */
export const COMMANDS: Record<string, Command> = {
  'account:create': {
    summary: 'create an account and its owner',
    usage: '--plan starter|pro|scale --owner-email E --owner-password P [--name N]',
    options: Joi.object({
      plan: Joi.string().valid(...PLANS).required(),
      'owner-email': email.required(),
      'owner-password': password.required(),
      name: Joi.string().max(120),
    }),
    run: (db, o) => openAccount(db, { plan: o.plan as Plan, ownerEmail: o['owner-email'], ownerPassword: o['owner-password'], name: o.name }),
  },
  'user:add': {
    summary: 'give a person a seat in an account',
    usage: '--account A --email E --password P --role owner|admin|member',
    options: Joi.object({ account: accountId.required(), email: email.required(), password: password.required(), role: Joi.string().valid(...ROLES).required() }),
    run: async (db, o) => {
      await requireAccount(db, o.account);
      const person = await preparePerson(db, o.email, o.password);
      return db.transaction(async (tx) => {
        await requireAccount(tx, o.account);
        const user = await ensureUser(tx, person);
        const out = await addMember(tx, { accountId: o.account, userId: user.id, email: user.email, role: o.role as Role });
        await recordAudit(tx, { accountId: o.account, action: 'member.added', via: 'cli', targetType: 'user', targetId: user.id, data: { role: o.role } });
        return out;
      });
    },
  },
  'user:set-role': {
    summary: "change a member's role (recorded in the audit log)",
    usage: '--account A --email E --role owner|admin|member',
    options: Joi.object({ account: accountId.required(), email: email.required(), role: Joi.string().valid(...ROLES).required() }),
    run: async (db, o) => {
      const member = await memberOrFail(db, o.account, o.email);
      const out = await db.transaction((tx) => setMemberRole(tx, { accountId: o.account, userId: member.userId, role: o.role as Role }));
      return { ...out, email: member.email };
    },
  },
  'key:create': {
    summary: 'issue an API key for a member (shown only here)',
    usage: '--account A --email E --scopes s1,s2 [--read-only] [--expires-in 30d]',
    switches: ['read-only'],
    options: Joi.object({
      account: accountId.required(),
      email: email.required(),
      scopes: scopes.required(),
      'read-only': Joi.boolean().default(false),
      'expires-in': Joi.string().custom((v: string, h) => (parseDuration(v) === null ? h.message({ custom: '--expires-in must look like 30d, 12h or 45m' }) : v)),
    }),
    run: async (db, o) => {
      const member = await memberOrFail(db, o.account, o.email);
      const ms = o['expires-in'] ? parseDuration(o['expires-in']) : null;
      return db.transaction((tx) =>
        createApiKey(tx, {
          accountId: o.account, userId: member.userId, identityId: member.identityId, role: member.role as Role,
          scopes: o.scopes, readOnly: o['read-only'], expiresAt: ms ? new Date(Date.now() + ms) : undefined,
        }),
      );
    },
  },
  'key:revoke': {
    summary: 'revoke an API key or agent token',
    usage: '--account A --key-id K',
    options: Joi.object({ account: accountId.required(), 'key-id': Joi.string().pattern(/^key_[a-z0-9]+$/).required() }),
    run: async (db, o) => {
      await db.transaction((tx) => revokeCredential(tx, { accountId: o.account, credentialId: o['key-id'] }));
      return { ok: true, key_id: o['key-id'] };
    },
  },
  'agent:create': {
    summary: "register an agent identity and issue its token, on the approver's seat",
    usage: '--account A --name N --approved-by E --scopes s1,s2',
    options: Joi.object({ account: accountId.required(), name: Joi.string().min(1).max(80).required(), 'approved-by': email.required(), scopes: scopes.required() }),
    run: async (db, o) => {
      const member = await memberOrFail(db, o.account, o['approved-by']);
      const out = await db.transaction((tx) =>
        createAgent(tx, { accountId: o.account, name: o.name, approvedByUserId: member.userId, approverRole: member.role as Role, scopes: o.scopes }),
      );
      return { identity_id: out.identity.id, token: out.token, scopes: out.scopes };
    },
  },
  'account:set-state': {
    summary: 'switch an account between active, read_only and suspended',
    usage: '--account A --state active|read_only|suspended',
    options: Joi.object({ account: accountId.required(), state: Joi.string().valid(...ACCOUNT_STATES).required() }),
    run: async (db, o) => {
      await db.transaction((tx) => setAccountState(tx, o.account, o.state as AccountState));
      return { ok: true, account_id: o.account, state: o.state };
    },
  },
  'demo:reset': {
    summary: 'development only: drop the local database, make it again and seed a new demo account (asks first)',
    usage: '[--yes]',
    switches: ['yes'],
    options: Joi.object({ yes: Joi.boolean().default(false) }),
    developmentOnly: true,
    manage: (url, o, io) => demoReset(url, { yes: o.yes }, io),
  },
  'webhooks:listen': {
    summary: 'development only: receive an account\'s webhooks here (local HTTPS receiver, endpoint removed on Ctrl-C)',
    usage: '--account A [--events message.posted,mention] [--forward-to http://localhost:8080/hook] [--payload pointers|text] [--as OWNER_EMAIL]',
    options: Joi.object({
      account: accountId.required(),
      events: eventList.default([...MESSAGE_EVENT_TYPES]),
      'forward-to': localHttpUrl,
      payload: Joi.string().valid('pointers', 'text').default('pointers'),
      as: email,
    }),
    developmentOnly: true,
    serve: (db, o, io) => webhooksListen(db, o as ListenOptions, io),
  },
  'account:set-plan': {
    summary: "change an account's plan",
    usage: '--account A --plan starter|pro|scale',
    options: Joi.object({ account: accountId.required(), plan: Joi.string().valid(...PLANS).required() }),
    run: async (db, o) => {
      await db.transaction((tx) => setAccountPlan(tx, o.account, o.plan as Plan));
      return { ok: true, account_id: o.account, plan: o.plan };
    },
  },
};
