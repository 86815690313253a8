import request from 'supertest';
import { asc, eq, events } from '@teamchat/db';
import { addPerson, bearer, newAccount, newKey, type Harness, type TestAccount } from './harness';

/** Helpers for the messaging tests: an account with an owner key, callers by key, the outbox rows. */
export interface Caller {
  key: string;
  identityId: string;
  email: string;
  get(path: string): request.Test;
  post(path: string, body?: object): request.Test;
  patch(path: string, body?: object): request.Test;
  put(path: string): request.Test;
  del(path: string): request.Test;
}

export function callerFor(h: Harness, accountId: string, key: string, identityId: string, email: string): Caller {
  const base = `/accounts/${accountId}`;
  return {
    key, identityId, email,
    get: (p) => request(h.api).get(base + p).set(bearer(key)),
    post: (p, body = {}) => request(h.api).post(base + p).set(bearer(key)).send(body),
    patch: (p, body = {}) => request(h.api).patch(base + p).set(bearer(key)).send(body),
    put: (p) => request(h.api).put(base + p).set(bearer(key)),
    del: (p) => request(h.api).delete(base + p).set(bearer(key)),
  };
}

export interface MessagingAccount extends TestAccount {
  owner: TestAccount['owner'];
  /** the owner's API key caller (account:manage too, to follow jobs) */
  ownerApi: Caller;
}

export async function messagingAccount(h: Harness): Promise<MessagingAccount> {
  const acct = await newAccount(h);
  const key = await newKey(h, acct.accountId, acct.owner.email, ['account:manage']);
  return { ...acct, ownerApi: callerFor(h, acct.accountId, key, acct.owner.identityId, acct.owner.email) };
}

/** A new member of the account with an API key. */
export async function memberCaller(h: Harness, accountId: string, role: 'member' | 'admin' = 'member', opts: { readOnly?: boolean } = {}): Promise<Caller> {
  const person = await addPerson(h, accountId, role);
  const key = await newKey(h, accountId, person.email, [], opts);
  return callerFor(h, accountId, key, person.identity_id, person.email);
}

/** Creates a channel through the API and returns its id. */
export async function makeChannel(caller: Caller, name?: string): Promise<string> {
  const res = await caller.post('/channels', { name: name ?? `c-${Math.random().toString(36).slice(2, 10)}` });
  if (res.status !== 201) throw new Error(`create channel: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id as string;
}

export async function addToChannel(caller: Caller, channelId: string, identityId: string): Promise<void> {
  const res = await caller.post(`/channels/${channelId}/members`, { identity_id: identityId });
  if (res.status !== 201 && res.status !== 200) throw new Error(`add member: ${res.status} ${JSON.stringify(res.body)}`);
}

export async function post(caller: Caller, channelId: string, body: object): Promise<{ ts: string; version: number; [k: string]: unknown }> {
  const res = await caller.post(`/channels/${channelId}/messages`, body);
  if (res.status !== 201) throw new Error(`post: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** The account's outbox rows, oldest first. */
export async function eventsOf(h: Harness, accountId: string) {
  return h.deps.database.db.select().from(events).where(eq(events.accountId, accountId)).orderBy(asc(events.seq));
}

export const byType = <R extends { type: string }>(rows: R[], type: string): R[] => rows.filter((r) => r.type === type);
