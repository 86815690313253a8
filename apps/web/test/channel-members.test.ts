import request from 'supertest';
import { addPerson, bearer, newAccount, newKey } from '../../../test/support/harness';
import { newPage, seriousViolations, signIn, startWebEnv, type WebEnv } from './support/browser';

jest.setTimeout(150_000);

/**
 * Channel membership in the app (docs/api.md "Visibility and membership": any channel member may
 * add any identity; owners and admins see every channel and may join; only members read messages)
 * and who is offered Edit and Delete (the author, or an owner/admin: "Edits, versions" and
 * "Deletion and approvals").
 */
let env: WebEnv;
beforeAll(async () => {
  env = await startWebEnv();
});
afterAll(async () => {
  await env?.close();
});

test('the owner adds a member to #general from its Members panel; the member then sees it, posts, and is offered Edit/Delete only on their own message', async () => {
  const a = await newAccount(env.h);
  const m = await addPerson(env.h, a.accountId, 'member');
  const owner = await newPage(env);
  await signIn(owner.page, a.owner.email);
  await owner.page.getByLabel('New channel').fill('general');
  await owner.page.getByRole('button', { name: 'Create channel' }).click();
  await owner.page.getByRole('heading', { name: '#general' }).waitFor();
  await owner.page.getByLabel('Message', { exact: true }).fill('Welcome, everyone');
  await owner.page.getByRole('button', { name: 'Send', exact: true }).click();
  await owner.page.getByText('Welcome, everyone').waitFor();

  // the member, before being added: no #general, and a word on how to get in
  const member = await newPage(env);
  await signIn(member.page, m.email);
  await member.page.getByRole('heading', { name: 'Channels', level: 1 }).waitFor();
  await member.page.getByText('ask one of its members to add you').waitFor();
  expect(await member.page.getByRole('link', { name: '#general' }).count()).toBe(0);

  const panel = owner.page.getByRole('region', { name: 'Members' });
  await panel.getByRole('list', { name: 'Channel members' }).getByText(a.owner.email).waitFor();
  const add = panel.getByRole('button', { name: 'Add people' });
  expect(await add.getAttribute('aria-expanded')).toBe('false');
  await add.click();
  expect(await add.getAttribute('aria-expanded')).toBe('true');
  const who = panel.getByLabel('Person or agent');
  // people already in the channel are not offered
  expect(await who.locator('option', { hasText: a.owner.email }).count()).toBe(0);
  await who.selectOption({ label: `${m.email} (person)` });
  await panel.getByRole('button', { name: 'Add to channel' }).click();
  await panel.getByRole('status').getByText(`Added ${m.email} to #general.`).waitFor();
  await panel.getByRole('list', { name: 'Channel members' }).getByText(m.email).waitFor();
  expect(await seriousViolations(owner.page)).toEqual([]);

  // now the member has it
  await member.page.reload();
  await member.page.getByRole('link', { name: '#general' }).click();
  const pane = member.page.getByRole('region', { name: '#general' });
  await pane.getByText('Welcome, everyone').waitFor();
  await member.page.getByLabel('Message', { exact: true }).fill('Glad to be here');
  await member.page.getByRole('button', { name: 'Send', exact: true }).click();
  const mine = pane.getByRole('listitem').filter({ hasText: 'Glad to be here' });
  await mine.getByRole('button', { name: 'Edit' }).waitFor();
  await mine.getByRole('button', { name: 'Delete' }).waitFor();
  const theirs = pane.getByRole('listitem').filter({ hasText: 'Welcome, everyone' });
  await theirs.getByRole('button', { name: 'React thumbsup' }).waitFor();
  expect(await theirs.getByRole('button', { name: 'Edit' }).count()).toBe(0);
  expect(await theirs.getByRole('button', { name: 'Delete' }).count()).toBe(0);
  // a member of the channel may add people too
  await member.page.getByRole('region', { name: 'Members' }).getByRole('button', { name: 'Add people' }).waitFor();
  expect(await seriousViolations(member.page)).toEqual([]);

  // the owner may edit and delete anyone's message (the API's rule), so is offered both
  await owner.page.reload();
  const ownerPane = owner.page.getByRole('region', { name: '#general' });
  const members = ownerPane.getByRole('listitem').filter({ hasText: 'Glad to be here' });
  await members.getByRole('button', { name: 'Delete' }).waitFor();
  await members.getByRole('button', { name: 'Edit' }).waitFor();
  await owner.context.close();
  await member.context.close();
});

test('an owner sees a channel they are not in, its members, and joins it; a member\'s deep link to a channel they are not in says so', async () => {
  const a = await newAccount(env.h);
  const m = await addPerson(env.h, a.accountId, 'member');
  const memberKey = await newKey(env.h, a.accountId, m.email, []);
  const side = (await request(env.h.api).post(`/accounts/${a.accountId}/channels`).set(bearer(memberKey)).send({ name: 'side-project' }).expect(201)).body;
  await request(env.h.api).post(`/accounts/${a.accountId}/channels/${side.id}/messages`).set(bearer(memberKey)).send({ text: 'notes from the side' }).expect(201);

  const owner = await newPage(env);
  await signIn(owner.page, a.owner.email);
  await owner.page.getByRole('link', { name: '#side-project' }).click();
  await owner.page.getByText('You are not a member of #side-project').waitFor();
  await owner.page.getByRole('region', { name: 'Members' }).getByText(m.email).waitFor();
  expect(await owner.page.getByLabel('Message', { exact: true }).count()).toBe(0);
  expect(await seriousViolations(owner.page)).toEqual([]);
  await owner.page.getByRole('button', { name: 'Join channel' }).click();
  await owner.page.getByRole('region', { name: '#side-project' }).getByText('notes from the side').waitFor();
  await owner.page.getByLabel('Message', { exact: true }).waitFor();
  await owner.context.close();

  const other = await addPerson(env.h, a.accountId, 'member');
  const outsider = await newPage(env);
  await signIn(outsider.page, other.email);
  await outsider.page.goto(`/a/${a.accountId}/channels/${side.id}`);
  await outsider.page.getByRole('heading', { name: 'Not a member of this channel' }).waitFor();
  expect(await outsider.page.getByLabel('Message', { exact: true }).count()).toBe(0);
  await outsider.context.close();
});

test('Members shows the role command as code; Agents caps the name at the API\'s 80; the audit log names people, not ids', async () => {
  const a = await newAccount(env.h);
  const key = await newKey(env.h, a.accountId, a.owner.email, []);
  await request(env.h.api).post(`/accounts/${a.accountId}/channels`).set(bearer(key)).send({ name: 'audited' }).expect(201);
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.goto(`/a/${a.accountId}/members`);
  await page.getByRole('heading', { name: 'Members', level: 1 }).waitFor();
  expect(await page.locator('main code').filter({ hasText: 'user:set-role' }).count()).toBe(1);
  expect(await page.locator('main').textContent()).not.toContain('`');

  await page.goto(`/a/${a.accountId}/agents`);
  expect(await page.getByLabel('Agent name').getAttribute('maxlength')).toBe('80');

  await page.goto(`/a/${a.accountId}/audit`);
  const row = page.getByRole('row').filter({ hasText: 'channel.created' });
  await row.getByText('#audited').waitFor();
  await row.getByText(a.owner.email).waitFor();
  expect(await row.textContent()).not.toMatch(/usr_/);
  await context.close();
});
