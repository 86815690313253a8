import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { and, eq, messageFiles } from '@teamchat/db';
import { signInWeb, startHarness, type Harness } from '../../../../test/support/harness';
import { byType, eventsOf, makeChannel, messagingAccount, post, type Caller } from '../../../../test/support/messaging';

/**
 * docs/api.md "Edits, versions, ETag and If-Match": a PATCH that changes nothing answers the message
 * unchanged (no new version, no event), so whoever holds that version may still edit without a 409
 * edit_conflict. Attachments are stored as jsonb, which reads keys back in its own order: re-sending
 * the attachments as GET returned them (or with their keys in any order) is no change.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ filesDir: mkdtempSync(path.join(tmpdir(), 'attachment-edits-')), filesDriver: 'local' });
});
afterAll(async () => { await h.close(); });

type Attachment = Record<string, unknown>;
type Message = { ts: string; version: number; edited_at: string | null; attachments: Attachment[] };

/** Reserves, uploads and completes a small text file through the owner's web session; its id. */
async function uploadFile(accountId: string, email: string): Promise<string> {
  const web = await signInWeb(h, email);
  const bytes = Buffer.from('meeting notes');
  const reserved = await web.agent.post(`/accounts/${accountId}/uploads`).set('X-CSRF-Token', web.csrf)
    .send({ name: 'notes.txt', size: bytes.length, content_type: 'text/plain' });
  expect(reserved.status).toBe(201);
  const put = await request(h.web).put(reserved.body.upload.url.replace(/^http:\/\/web\.test/, '')).set(reserved.body.upload.headers).send(bytes);
  expect(put.status).toBe(204);
  const done = await web.agent.post(`/accounts/${accountId}/uploads/${reserved.body.file.id}/complete`).set('X-CSRF-Token', web.csrf);
  expect(done.status).toBe(200);
  return done.body.id as string;
}

/** The message as the channel list shows it (what a client reads before editing). */
async function read(caller: Caller, channelId: string, ts: string): Promise<Message> {
  const list = await caller.get(`/channels/${channelId}/messages`);
  return (list.body.data as Message[]).find((m) => m.ts === ts)!;
}

const reversedKeys = (a: Attachment): Attachment => Object.fromEntries(Object.entries(a).reverse());

const edit = (caller: Caller, channelId: string, ts: string, body: object, version: number) =>
  caller.patch(`/channels/${channelId}/messages/${ts}`, body).set('If-Match', `"${version}"`);

/** Re-sends each form of the attachments: the answer is the message unchanged (version 1, never edited). */
async function expectNoEdit(caller: Caller, channelId: string, ts: string, forms: Attachment[][]) {
  for (const attachments of forms) {
    const res = await edit(caller, channelId, ts, { attachments }, 1);
    expect({ attachments, status: res.status, version: res.body.version, edited_at: res.body.edited_at })
      .toEqual({ attachments, status: 200, version: 1, edited_at: null });
    expect(res.headers.etag).toBe('"1"');
  }
}

describe('Message PATCH that re-sends its attachments unchanged (docs/api.md "Edits, versions, ETag and If-Match")', () => {
  test('a file attachment as GET returned it, or with its keys in another order, is no edit; the reader of version 1 may still edit; message_files stays', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const fileId = await uploadFile(a.accountId, a.owner.email);
    const m = await post(a.ownerApi, ch, { text: 'notes', attachments: [{ file_id: fileId, title: 'Notes' }] });
    const seen = await read(a.ownerApi, ch, m.ts);
    expect(seen.attachments).toEqual([{ file_id: fileId, name: 'notes.txt', size: 13, content_type: 'text/plain', title: 'Notes' }]);
    const [attachment] = seen.attachments;

    await expectNoEdit(a.ownerApi, ch, m.ts, [seen.attachments, [reversedKeys(attachment)], [{ title: 'Notes', file_id: fileId }]]);
    const filesOf = () => h.deps.database.db.select().from(messageFiles).where(and(eq(messageFiles.channelId, ch), eq(messageFiles.fileId, fileId)));
    expect(await filesOf()).toHaveLength(1);
    expect(await read(a.ownerApi, ch, m.ts)).toMatchObject({ version: 1, edited_at: null });

    // the holder of version 1 edits without a false 409 edit_conflict
    const real = await edit(a.ownerApi, ch, m.ts, { text: 'notes, final' }, 1);
    expect(real.status).toBe(200);
    expect(real.body).toMatchObject({ version: 2, attachments: seen.attachments });
    expect(await filesOf()).toHaveLength(1);
    expect(byType(await eventsOf(h, a.accountId), 'message.edited')).toHaveLength(1);

    // a real change of the attachment (its title) is an edit
    const retitled = await edit(a.ownerApi, ch, m.ts, { attachments: [{ ...attachment, title: 'Final notes' }] }, 2);
    expect(retitled.status).toBe(200);
    expect(retitled.body.version).toBe(3);
    expect(retitled.body.edited_at).not.toBeNull();
    expect(byType(await eventsOf(h, a.accountId), 'message.edited')).toHaveLength(2);
  });

  test('URL attachments with their keys in another order are no edit; another URL or another order of the attachments is', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const spec = { url: 'https://example.com/spec.pdf', title: 'spec', mime_type: 'application/pdf', size: 1024 };
    const site = { url: 'https://example.com' };
    const m = await post(a.ownerApi, ch, { text: 'links', attachments: [spec, site] });
    const seen = await read(a.ownerApi, ch, m.ts);

    await expectNoEdit(a.ownerApi, ch, m.ts, [seen.attachments, [spec, site], [reversedKeys(spec), site]]);
    const following = await edit(a.ownerApi, ch, m.ts, { text: 'links, read' }, 1);
    expect(following.status).toBe(200);
    expect(following.body.version).toBe(2);

    const reordered = await edit(a.ownerApi, ch, m.ts, { attachments: [site, spec] }, 2);
    expect(reordered.status).toBe(200);
    expect(reordered.body.version).toBe(3);
    const moved = await edit(a.ownerApi, ch, m.ts, { attachments: [{ ...site, url: 'https://example.org' }, spec] }, 3);
    expect(moved.status).toBe(200);
    expect(moved.body.version).toBe(4);
    expect(byType(await eventsOf(h, a.accountId), 'message.edited')).toHaveLength(3);
  });
});
