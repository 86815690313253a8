import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import request from 'supertest';
import { startWorker, type RunningWorker } from '../../worker/src/worker';
import { addPerson, bearer, newAccount, newKey, signInWeb } from '../../../test/support/harness';
import { startReceiver, type Receiver } from '../../../test/support/https-receiver';
import { jobTrace } from '../../../test/support/job-trace';
import { byType, eventsOf } from '../../../test/support/messaging';
import { ALL_EVENTS, createEndpointRow, eventually, webhookConfig } from '../../../test/support/webhooks';
import { call, startMcpHarness, type McpHarness } from './support';

/**
 * docs/mcp.md "How tools call the API": every tool calls exactly one REST endpoint of the API host with the caller's
 * credential, for the toolsets other than webhooks (webhooks.test.ts), each tool called through
 * the SDK's Client and its answer compared with the REST answer; a delete's approval followed to
 * its job through get_job; and `session` carried into delivered webhook bodies in both payload
 * modes. Real MCP server, API host, worker (jobs and webhooks, scoped to this file's accounts),
 * PostgreSQL, Redis and an HTTPS receiver on loopback.
 */
let h: McpHarness;
let rx: Receiver;
let worker: RunningWorker;
const accountIds: string[] = [];
beforeAll(async () => {
  h = await startMcpHarness(webhookConfig());
  rx = await startReceiver();
  worker = startWorker(h.deps, { webhooks: { accountIds, maintenanceIntervalMs: 300 } });
});
afterAll(async () => {
  await worker.close();
  await rx.close();
  await h.close();
});

type Result = Awaited<ReturnType<typeof call>>;
function ok(r: Result): any {
  expect([r.isError ?? false, r.structuredContent?.http_status]).toEqual([false, undefined]);
  expect(JSON.parse((r.content as Array<{ text: string }>)[1].text)).toEqual(r.structuredContent);
  return r.structuredContent;
}

const ALL_SCOPES = ['members:manage', 'identities:manage', 'account:manage', 'audit:read'];

async function setup() {
  const acct = await newAccount(h);
  accountIds.push(acct.accountId);
  const key = await newKey(h, acct.accountId, acct.owner.email, ALL_SCOPES);
  const rest = {
    get: (p: string) => request(h.api).get(`/accounts/${acct.accountId}${p}`).set(bearer(key)),
    post: (p: string, b: object) => request(h.api).post(`/accounts/${acct.accountId}${p}`).set(bearer(key)).send(b),
  };
  const channelId = (await rest.post('/channels', { name: `c-${Math.random().toString(36).slice(2, 10)}` }).expect(201)).body.id as string;
  const client: Client = await h.connect(key, { name: 'toolset-agent', version: '3.1.4' });
  return { acct, key, rest, channelId, client };
}

describe('each tool answers what its REST endpoint answers (every tool is backed by one endpoint)', () => {
  test('read_history, list_channels: the REST pages', async () => {
    const s = await setup();
    ok(await call(s.client, 'post_message', { channel_id: s.channelId, text: 'one' }));
    ok(await call(s.client, 'post_message', { channel_id: s.channelId, text: 'two' }));
    const history = ok(await call(s.client, 'read_history', { channel_id: s.channelId, limit: 1 }));
    expect(history.data.map((m: { text: string }) => m.text)).toEqual(['two']);
    // (a cursor carries its own expiry, so two pages of one list differ only there)
    expect(history).toEqual({ ...(await s.rest.get(`/channels/${s.channelId}/messages?limit=1`).expect(200)).body, next_cursor: expect.any(String) });
    const next = ok(await call(s.client, 'read_history', { channel_id: s.channelId, cursor: history.next_cursor }));
    expect(next.data.map((m: { text: string }) => m.text)).toEqual(['one']);
    expect(ok(await call(s.client, 'list_channels'))).toEqual((await s.rest.get('/channels').expect(200)).body);
  });

  test('open_dm and list_dms: the DM as REST opens and lists it (the same member set answers the same DM)', async () => {
    const s = await setup();
    const other = await addPerson(h, s.acct.accountId, 'member');
    const opened = ok(await call(s.client, 'open_dm', { members: [other.identity_id], client_ref: 'dm-1' }));
    expect(opened).toMatchObject({ id: expect.any(String), kind: 'dm', client_ref: 'dm-1' });
    expect(opened.members).toEqual(expect.arrayContaining([other.identity_id, s.acct.owner.identityId]));
    expect(ok(await call(s.client, 'open_dm', { members: [other.identity_id] })).id).toBe(opened.id);
    const dms = ok(await call(s.client, 'list_dms'));
    expect(dms.data.map((d: { id: string }) => d.id)).toEqual([opened.id]);
    expect(dms).toEqual((await s.rest.get('/dms').expect(200)).body);
  });

  test('list_members, list_identities, register_agent: the directory as REST answers it; the new agent token works', async () => {
    const s = await setup();
    expect(ok(await call(s.client, 'list_members'))).toEqual((await s.rest.get('/members').expect(200)).body);
    const agent = ok(await call(s.client, 'register_agent', { name: 'helper bot', scopes: ['audit:read'], client_ref: 'bot-1' }));
    expect(agent).toMatchObject({ token: expect.stringMatching(/^tc_agt_/), scopes: expect.arrayContaining(['audit:read', 'channels:read']), client_ref: 'bot-1' });
    const identities = ok(await call(s.client, 'list_identities'));
    expect(identities.data.map((i: { id: string }) => i.id)).toContain(agent.id);
    expect(identities).toEqual((await s.rest.get('/identities').expect(200)).body);
    // The agent's token opens its own session, whose tools follow its scopes.
    const names = (await (await h.connect(agent.token)).listTools()).tools.map((t) => t.name);
    expect(names).toContain('read_audit_log');
    expect(names).not.toContain('list_members');
  });

  test('get_account and read_audit_log: the account, its plan and state; the audit page', async () => {
    const s = await setup();
    const account = ok(await call(s.client, 'get_account'));
    const viaRest = (await s.rest.get('').expect(200)).body;
    expect(account).toMatchObject({ id: s.acct.accountId, plan: 'pro', state: 'active', seats: viaRest.seats, name: viaRest.name });
    expect(Object.keys(account).sort()).toEqual(Object.keys(viaRest).sort());
    expect(account.limits.seat_user_id).toBe(s.acct.owner.userId);
    ok(await call(s.client, 'register_agent', { name: 'audited bot' }));
    const audit = ok(await call(s.client, 'read_audit_log'));
    expect(audit.data.length).toBeGreaterThan(0);
    expect(audit).toEqual((await s.rest.get('/audit').expect(200)).body);
  });
});

describe('a delete through MCP (confirmation_required with the approval_url; nothing is deleted until a person approves)', () => {
  test('approved by a person on the web host, the job followed with get_job succeeds and the message is gone; message.deleted carries the MCP session', async () => {
    const s = await setup();
    const posted = ok(await call(s.client, 'post_message', { channel_id: s.channelId, text: 'delete me' }));
    const asked = await call(s.client, 'delete_message', { channel_id: s.channelId, ts: posted.ts });
    expect(asked.isError).toBeFalsy();
    const { approval_url: url, approval_id: approvalId } = asked.structuredContent.error;
    expect(url).toBe(`http://web.test/accounts/${s.acct.accountId}/approvals/${approvalId}`);
    expect((await s.rest.get(`/channels/${s.channelId}/messages`).expect(200)).body.data).toHaveLength(1);

    const { agent, csrf } = await signInWeb(h, s.acct.owner.email);
    const approved = await agent.post(`${new URL(url).pathname}/approve`).set('X-CSRF-Token', csrf).expect(202);
    const getJob = async () => ok(await call(s.client, 'get_job', { job_id: approved.body.job_id }));
    const job = await eventually(async () => {
      const j = await getJob();
      return j.status === 'succeeded' || j.status === 'failed' ? j : null;
    }, 20_000, 'the delete job', async () =>
      // Says why: never enqueued, waiting for a retry's backoff, or still running.
      `get_job answers ${JSON.stringify(await getJob())}; ${await jobTrace(h.deps, approved.body.job_id)}`);
    expect(job).toMatchObject({ id: approved.body.job_id, status: 'succeeded' });
    expect(job).toEqual((await s.rest.get(`/jobs/${approved.body.job_id}`).expect(200)).body);
    expect((await s.rest.get(`/channels/${s.channelId}/messages`).expect(200)).body.data).toHaveLength(0);
    const [deleted] = byType(await eventsOf(h, s.acct.accountId), 'message.deleted');
    expect(deleted.data).toMatchObject({ ts: posted.ts, session: { client: 'toolset-agent', version: '3.1.4' }, approval_id: approvalId });
  });

  test('get_job of an unknown job answers not_found as a tool error', async () => {
    const s = await setup();
    const r = await call(s.client, 'get_job', { job_id: 'job_00000000000000000000' });
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toMatchObject({ http_status: 404, error: { code: 'not_found' } });
  });
});

describe('`session` in delivered webhook bodies (every event about an MCP post carries it, in both payload modes)', () => {
  test('a post through MCP reaches a pointers and a text endpoint carrying session; its edit and reaction, made through plain REST, carry it too', async () => {
    const s = await setup();
    const paths = { pointers: `/ptr-${Math.random().toString(36).slice(2, 8)}`, text: `/txt-${Math.random().toString(36).slice(2, 8)}` };
    for (const mode of ['pointers', 'text'] as const) {
      await createEndpointRow(h, { accountId: s.acct.accountId, createdByUserId: s.acct.owner.userId, url: rx.url(paths[mode]), payload: mode, events: ALL_EVENTS });
    }
    const session = { client: 'toolset-agent', version: '3.1.4' };
    const posted = ok(await call(s.client, 'post_message', { channel_id: s.channelId, text: 'from an agent' }));
    // An edit and a reaction by plain REST are still about the MCP post: their events carry its session.
    await request(h.api).patch(`/accounts/${s.acct.accountId}/channels/${s.channelId}/messages/${posted.ts}`).set(bearer(s.key)).send({ text: 'edited by REST' }).expect(200);
    await request(h.api).put(`/accounts/${s.acct.accountId}/channels/${s.channelId}/messages/${posted.ts}/reactions/eyes`).set(bearer(s.key)).expect((r) => expect([200, 201]).toContain(r.status));

    const bodiesOf = async (mode: 'pointers' | 'text') => eventually(async () => {
      const got = rx.received.filter((r) => r.path === paths[mode]).map((r) => JSON.parse(r.body));
      return ['message.posted', 'message.edited', 'reaction.added'].every((t) => got.some((b) => b.type === t)) ? got : null;
    }, 20_000, `the ${mode} deliveries`);
    for (const mode of ['pointers', 'text'] as const) {
      const bodies = await bodiesOf(mode);
      for (const type of ['message.posted', 'message.edited', 'reaction.added']) {
        const b = bodies.find((x) => x.type === type);
        expect([mode, type, b.ts, b.session]).toEqual([mode, type, posted.ts, session]);
      }
      const post = bodies.find((x) => x.type === 'message.posted');
      expect([mode, post.text]).toEqual([mode, mode === 'text' ? 'from an agent' : undefined]);
    }
  });
});
