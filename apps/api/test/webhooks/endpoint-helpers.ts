import net from 'node:net';
import request from 'supertest';
import { newId } from '@teamchat/core';
import { webhookBodies, webhookDeliveries } from '@teamchat/db';
import { addPerson, bearer, newAccount, newAgent, newKey, signInWeb, type Harness, type TestAccount } from '../../../../test/support/harness';

/**
 * Helpers of the webhook endpoint tests. Registered URLs point at a loopback port where nothing
 * listens (the harness exempts 127.0.0.1 from the private-address rule), so even a real test
 * delivery never leaves the machine; no delivery worker runs in these tests.
 */
export const LOOPBACK_ONLY = { webhookAllowedHosts: ['127.0.0.1'] as readonly string[] };

/** A loopback port with nothing listening (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export async function hookUrl(path = '/hook'): Promise<string> {
  return `https://127.0.0.1:${await closedPort()}${path}`;
}

export interface Client {
  get(path: string): request.Test;
  post(path: string, body?: object): request.Test;
  patch(path: string, body?: object): request.Test;
  del(path: string): request.Test;
}

/** Through a credential on the API host; paths are relative to /accounts/{id}. */
export function keyClient(h: Harness, accountId: string, key: string): Client {
  const base = `/accounts/${accountId}`;
  return {
    get: (p) => request(h.api).get(base + p).set(bearer(key)),
    post: (p, body = {}) => request(h.api).post(base + p).set(bearer(key)).send(body),
    patch: (p, body = {}) => request(h.api).patch(base + p).set(bearer(key)).send(body),
    del: (p) => request(h.api).delete(base + p).set(bearer(key)),
  };
}

/** Through a web session on the web host (cookie and CSRF token). */
export async function webClient(h: Harness, accountId: string, email: string): Promise<Client> {
  const { agent, csrf } = await signInWeb(h, email);
  const base = `/accounts/${accountId}`;
  return {
    get: (p) => agent.get(base + p),
    post: (p, body = {}) => agent.post(base + p).set('X-CSRF-Token', csrf).send(body),
    patch: (p, body = {}) => agent.patch(base + p).set('X-CSRF-Token', csrf).send(body),
    del: (p) => agent.delete(base + p).set('X-CSRF-Token', csrf),
  };
}

export interface WebhookAccount extends TestAccount {
  /** the owner's API key with webhooks:manage */
  key: Client;
  /** the owner signed in on the web host */
  web: Client;
}

export async function webhookAccount(h: Harness, plan: 'starter' | 'pro' | 'scale' = 'pro'): Promise<WebhookAccount> {
  const acct = await newAccount(h, plan);
  const key = await newKey(h, acct.accountId, acct.owner.email, ['webhooks:manage']);
  return { ...acct, key: keyClient(h, acct.accountId, key), web: await webClient(h, acct.accountId, acct.owner.email) };
}

/** An agent token with webhooks:manage, approved by the owner. */
export async function agentClient(h: Harness, acct: TestAccount): Promise<Client> {
  const agent = await newAgent(h, acct.accountId, acct.owner.email, ['webhooks:manage']);
  return keyClient(h, acct.accountId, agent.token);
}

export async function adminOf(h: Harness, accountId: string) {
  return addPerson(h, accountId, 'admin');
}

export async function register(client: Client, body: Record<string, unknown> = {}): Promise<request.Response> {
  return client.post('/webhooks', { url: await hookUrl(), events: ['message.posted'], channels: 'all', ...body });
}

/** Registers and returns the 201 body (throws otherwise). */
export async function registered(client: Client, body: Record<string, unknown> = {}) {
  const res = await register(client, body);
  if (res.status !== 201) throw new Error(`register: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as Record<string, any>;
}

/** Writes delivery-log rows for an endpoint directly (no worker runs here). */
export async function insertDeliveries(
  h: Harness,
  input: { accountId: string; endpointId: string; rows: Array<{ status: string; attemptedAt?: Date | null; latencyMs?: number | null; responseStatus?: number | null }> },
): Promise<string[]> {
  const db = h.deps.database.db;
  const ids: string[] = [];
  for (const r of input.rows) {
    const eventId = newId('event');
    const bodyId = newId('webhookBody');
    await db.insert(webhookBodies).values({ id: bodyId, accountId: input.accountId, eventId, eventType: 'message.posted', mode: 'pointers', body: '{}' });
    const id = newId('delivery');
    await db.insert(webhookDeliveries).values({
      id, accountId: input.accountId, endpointId: input.endpointId, eventId, eventType: 'message.posted', bodyId, kind: 'event',
      chainId: id, attempt: 1, status: r.status, attemptedAt: r.attemptedAt ?? null, latencyMs: r.latencyMs ?? null,
      responseStatus: r.responseStatus ?? null, eventCreatedAt: new Date(),
      nextRetryAt: r.status === 'retrying' ? new Date(Date.now() + 60_000) : null,
    });
    ids.push(id);
  }
  return ids;
}

/** Every response body and header of a test, as one string, to assert a secret never appears. */
export function everything(res: request.Response): string {
  return JSON.stringify({ body: res.body, headers: res.headers, text: res.text });
}
