import { MESSAGE_EVENT_TYPES, postMessage, renderEventBody, resolveActor, type Principal } from '@teamchat/core';
import { signInWeb, startHarness, type Harness } from '../../../../test/support/harness';
import { addToChannel, eventsOf, makeChannel, memberCaller, messagingAccount, post, type MessagingAccount } from '../../../../test/support/messaging';

/**
 * One module builds every event body (docs/webhooks.md, "Event bodies"): the rows written through the API are right
 * before they become bodies (session and counts on every message event, no links-only
 * message.edited, no text on deletes and reactions), and render as the spec's payload modes.
 */
let h: Harness;
beforeAll(async () => { h = await startHarness({ limitsEnabled: false }); });
afterAll(async () => { await h.close(); });

const SESSION = { client: 'claude-code', version: '1.2.3' };

/** A post made through an MCP session (the MCP server fills `session`; it calls this use case). */
async function postViaSession(a: MessagingAccount, channelId: string, text: string, extra: { threadTs?: bigint } = {}) {
  const principal: Principal = { via: 'api_key', id: 'key_test', userId: a.owner.userId, accountId: a.accountId, identityId: a.owner.identityId, readOnly: false };
  const { actor } = await resolveActor(h.deps.database.db, principal, a.accountId);
  return h.deps.database.db.transaction((tx) => postMessage(tx, {
    actor, channelId, text, session: SESSION, threadTsMicros: extra.threadTs,
    links: ['https://a.example', 'https://b.example', 'https://c.example'], attachments: [{ url: 'https://f.example/x.png' }],
  }));
}

async function raisedBy(accountId: string, fn: () => Promise<unknown>) {
  const before = (await eventsOf(h, accountId)).length;
  await fn();
  return (await eventsOf(h, accountId)).slice(before);
}

test('every message event row carries session, links_count and attachments_count (deletes and reactions too)', async () => {
  const a = await messagingAccount(h);
  const bob = await memberCaller(h, a.accountId);
  const ch = await makeChannel(a.ownerApi);
  await addToChannel(a.ownerApi, ch, bob.identityId);
  const dm = (await a.ownerApi.post('/dms', { members: [bob.identityId] }).expect(201)).body.id as string;
  const secret = 'the secret words';

  const rows = await raisedBy(a.accountId, async () => {
    const root = await postViaSession(a, ch, `${secret} <@${bob.identityId}> <!channel>`);
    await postViaSession(a, ch, `${secret} reply`, { threadTs: root.tsMicros });
    await postViaSession(a, dm, `${secret} in a dm`);
    const ts = (await a.ownerApi.get(`/channels/${ch}/messages`).expect(200)).body.data.at(-1).ts as string;
    await a.ownerApi.patch(`/channels/${ch}/messages/${ts}`, { text: `${secret} edited` }).expect(200);
    await a.ownerApi.put(`/channels/${ch}/messages/${ts}/reactions/eyes`).expect(201);
    await a.ownerApi.del(`/channels/${ch}/messages/${ts}/reactions/eyes`).expect(204);
    const { agent, csrf } = await signInWeb(h, a.owner.email);
    await agent.delete(`/accounts/${a.accountId}/channels/${ch}/messages/${ts}`).set('X-CSRF-Token', csrf).expect(204);
  });

  expect(new Set(rows.map((r) => r.type))).toEqual(new Set(MESSAGE_EVENT_TYPES));
  for (const r of rows) {
    expect({ type: r.type, ...(r.data as object) }).toMatchObject({ type: r.type, session: SESSION, links_count: 3, attachments_count: 1 });
  }
  for (const r of rows.filter((x) => ['message.deleted', 'reaction.added', 'reaction.removed'].includes(x.type))) {
    expect(r.data).not.toHaveProperty('content');
    expect(JSON.stringify(r.data)).not.toContain(secret);
  }

  // Rendered: pointers never carry text; text mode carries it only where the spec allows.
  for (const r of rows) {
    expect(renderEventBody(r, 'pointers')).not.toContain(secret);
    const text = JSON.parse(renderEventBody(r, 'text'));
    if (['message.deleted', 'reaction.added', 'reaction.removed'].includes(r.type)) expect(JSON.stringify(text)).not.toContain(secret);
    else expect(text.text).toContain(secret);
    expect(text).toMatchObject({ id: r.id, type: r.type, account_id: a.accountId, created_at: r.createdAt.toISOString(), session: SESSION, links_count: 3, attachments_count: 1 });
  }
});

test('message.edited fires only when the text or the attachments change: a links-only edit raises none (spec Subscribable events)', async () => {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  const m = await post(a.ownerApi, ch, { text: 'hello', links: ['https://a.example'] });
  const path = `/channels/${ch}/messages/${m.ts}`;

  let res: { body: { version: number; links: string[] } } = { body: { version: 0, links: [] } };
  const linksOnly = await raisedBy(a.accountId, async () => { res = await a.ownerApi.patch(path, { links: ['https://b.example'] }).expect(200); });
  expect(linksOnly).toEqual([]);
  // The edit itself still applies (a new version with the new links).
  expect(res.body).toMatchObject({ version: 2, links: ['https://b.example'] });

  const attachments = await raisedBy(a.accountId, () => a.ownerApi.patch(path, { attachments: [{ url: 'https://f.example/y' }] }).expect(200));
  expect(attachments.map((r) => r.type)).toEqual(['message.edited']);
  expect(attachments[0].data).toMatchObject({ version: 3, links_count: 1, attachments_count: 1, content: { text: 'hello', links: ['https://b.example'] } });

  const text = await raisedBy(a.accountId, () => a.ownerApi.patch(path, { text: 'hello again', links: [] }).expect(200));
  expect(text.map((r) => r.type)).toEqual(['message.edited']);
  expect(text[0].data).toMatchObject({ version: 4, links_count: 0, content: { text: 'hello again', links: [] } });
});
