import request from 'supertest';
import { revokeCredential } from '@teamchat/core';
import { PASSWORD, bearer, newAccount, newAgent, newKey, signInWeb, startHarness, uniqueEmail, type Harness } from '../../../../test/support/harness';

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

describe('Authentication rule 3: missing, unknown, expired or revoked credential → 401 unauthorized', () => {
  test('missing credential', async () => {
    const a = await newAccount(h);
    const res = await request(h.api).get(`/accounts/${a.accountId}`);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('unauthorized');
  });

  test('unknown key and malformed header', async () => {
    const a = await newAccount(h);
    const unknown = await request(h.api).get(`/accounts/${a.accountId}`).set(bearer('tc_key_doesnotexist000000000000000000000000000'));
    expect(unknown.status).toBe(401);
    const malformed = await request(h.api).get(`/accounts/${a.accountId}`).set('Authorization', 'Basic abc');
    expect(malformed.status).toBe(401);
    expect(malformed.body.error.code).toBe('unauthorized');
  });

  test('expired key', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['account:manage'], { expiresAt: new Date(Date.now() - 1000) });
    const res = await request(h.api).get(`/accounts/${a.accountId}`).set(bearer(key));
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('unauthorized');
  });

  test('revoked key stops working at once', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['account:manage', 'credentials:manage']);
    const ok = await request(h.api).get(`/accounts/${a.accountId}`).set(bearer(key));
    expect(ok.status).toBe(200);
    const list = await request(h.api).get(`/accounts/${a.accountId}/api-keys`).set(bearer(key));
    await h.deps.database.db.transaction((tx) => revokeCredential(tx, { accountId: a.accountId, credentialId: list.body.data[0].id }));
    const res = await request(h.api).get(`/accounts/${a.accountId}`).set(bearer(key));
    expect(res.status).toBe(401);
  });

  test('agent tokens authenticate on the API host', async () => {
    const a = await newAccount(h);
    const agent = await newAgent(h, a.accountId, a.owner.email, ['identities:manage']);
    const res = await request(h.api).get(`/accounts/${a.accountId}/identities`).set(bearer(agent.token));
    expect(res.status).toBe(200);
    expect(res.body.data.map((i: { id: string }) => i.id)).toContain(agent.identity.id);
  });
});

describe('Hosts rule 4: wrong-host use → 401 unauthorized, reason wrong_host, naming the host to use', () => {
  test('an API key on the web host', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['account:manage']);
    const res = await request(h.web).get(`/accounts/${a.accountId}`).set(bearer(key));
    expect(res.status).toBe(401);
    expect(res.body.error).toMatchObject({ code: 'unauthorized', reason: 'wrong_host', host: 'http://api.test' });
  });

  test('an agent token on the web host', async () => {
    const a = await newAccount(h);
    const agent = await newAgent(h, a.accountId, a.owner.email, []);
    const res = await request(h.web).get(`/accounts/${a.accountId}`).set(bearer(agent.token));
    expect(res.body.error).toMatchObject({ code: 'unauthorized', reason: 'wrong_host', host: 'http://api.test' });
  });

  test('a web session on the API host', async () => {
    const a = await newAccount(h);
    const { cookie } = await signInWeb(h, a.owner.email);
    const res = await request(h.api).get(`/accounts/${a.accountId}`).set('Cookie', cookie);
    expect(res.status).toBe(401);
    expect(res.body.error).toMatchObject({ code: 'unauthorized', reason: 'wrong_host', host: 'http://web.test' });
  });

  test('signing in on the API host', async () => {
    const a = await newAccount(h);
    const res = await request(h.api).post('/auth/sign-in').send({ email: a.owner.email, password: PASSWORD });
    expect(res.status).toBe(401);
    expect(res.body.error).toMatchObject({ reason: 'wrong_host', host: 'http://web.test' });
  });
});

describe('web sign-in, CSRF and sign-out', () => {
  test('sign-in answers csrf_token, user and accounts, and sets an httpOnly SameSite cookie', async () => {
    const a = await newAccount(h);
    const res = await request(h.web).post('/auth/sign-in').send({ email: a.owner.email, password: PASSWORD });
    expect(res.status).toBe(200);
    expect(typeof res.body.csrf_token).toBe('string');
    expect(res.body.user).toEqual({ id: a.owner.userId, email: a.owner.email });
    expect(res.body.accounts).toEqual([expect.objectContaining({ id: a.accountId, role: 'owner', plan: 'pro', state: 'active' })]);
    const cookie = (res.headers['set-cookie'] as unknown as string[])[0];
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
  });

  test('a wrong password and an unknown email answer the same', async () => {
    const a = await newAccount(h);
    const wrong = await request(h.web).post('/auth/sign-in').send({ email: a.owner.email, password: 'not the password' });
    const unknown = await request(h.web).post('/auth/sign-in').send({ email: uniqueEmail('nobody'), password: 'not the password' });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body).toEqual(unknown.body);
  });

  test('a web request that changes state needs X-CSRF-Token (403 forbidden, reason csrf)', async () => {
    const a = await newAccount(h);
    const { agent, csrf } = await signInWeb(h, a.owner.email);
    const missing = await agent.post(`/accounts/${a.accountId}/identities`).send({ name: 'bot' });
    expect(missing.status).toBe(403);
    expect(missing.body.error).toMatchObject({ code: 'forbidden', reason: 'csrf' });
    const wrong = await agent.post(`/accounts/${a.accountId}/identities`).set('X-CSRF-Token', 'nope').send({ name: 'bot' });
    expect(wrong.body.error).toMatchObject({ code: 'forbidden', reason: 'csrf' });
    const ok = await agent.post(`/accounts/${a.accountId}/identities`).set('X-CSRF-Token', csrf).send({ name: 'bot' });
    expect(ok.status).toBe(201);
    // Reads need no CSRF token.
    const read = await agent.get(`/accounts/${a.accountId}/identities`);
    expect(read.status).toBe(200);
  });

  test('sign-out ends the session on the server: the old cookie is refused', async () => {
    const a = await newAccount(h);
    const { agent, csrf, cookie } = await signInWeb(h, a.owner.email);
    expect((await agent.get(`/accounts/${a.accountId}`)).status).toBe(200);
    const out = await agent.post('/auth/sign-out').set('X-CSRF-Token', csrf);
    expect(out.status).toBe(200);
    const replay = await request(h.web).get(`/accounts/${a.accountId}`).set('Cookie', cookie);
    expect(replay.status).toBe(401);
    expect(replay.body.error.code).toBe('unauthorized');
  });

  test('sign-in validates its body', async () => {
    const res = await request(h.web).post('/auth/sign-in').send({ email: 'not-an-email' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
  });
});

describe('Hosts rule 5: every response carries X-Request-Id', () => {
  test('generated when absent, echoed when sane, replaced when not', async () => {
    const plain = await request(h.api).get('/accounts/acct_x');
    expect(plain.headers['x-request-id']).toMatch(/^req_/);
    const echoed = await request(h.api).get('/accounts/acct_x').set('X-Request-Id', 'trace-1234567890');
    expect(echoed.headers['x-request-id']).toBe('trace-1234567890');
    const insane = await request(h.api).get('/accounts/acct_x').set('X-Request-Id', 'bad id with spaces <script>');
    expect(insane.headers['x-request-id']).toMatch(/^req_/);
    const web = await request(h.web).get('/nowhere');
    expect(web.headers['x-request-id']).toBeTruthy();
  });
});

describe('web session lifetime follows the service clock', () => {
  test('a session expires after SESSION_TTL_HOURS, and one signed in at a moved clock works at that clock', async () => {
    const a = await newAccount(h);
    h.clock.advance(30 * 24 * 3600 * 1000);
    try {
      const { agent } = await signInWeb(h, a.owner.email);
      expect((await agent.get(`/accounts/${a.accountId}`)).status).toBe(200);
      h.clock.advance(h.deps.config.sessionTtlHours * 3600 * 1000 + 1000);
      const expired = await agent.get(`/accounts/${a.accountId}`);
      expect(expired.status).toBe(401);
    } finally {
      h.clock.reset();
    }
  });
});

describe('sign-in throttling', () => {
  test('after 10 failed sign-ins for an email, even the right password is refused with 429 and Retry-After', async () => {
    const a = await newAccount(h);
    for (let i = 0; i < 10; i++) {
      const res = await request(h.web).post('/auth/sign-in').send({ email: a.owner.email, password: 'wrong password' });
      expect(res.status).toBe(401);
    }
    const blocked = await request(h.web).post('/auth/sign-in').send({ email: a.owner.email.toUpperCase(), password: PASSWORD });
    expect(blocked.status).toBe(429);
    expect(blocked.body.error).toMatchObject({ code: 'rate_limited', scope: 'sign_in' });
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    // Another person is not affected.
    const b = await newAccount(h);
    expect((await request(h.web).post('/auth/sign-in').send({ email: b.owner.email, password: PASSWORD })).status).toBe(200);
  });

  test('a successful sign-in clears earlier failures', async () => {
    const a = await newAccount(h);
    for (let i = 0; i < 9; i++) await request(h.web).post('/auth/sign-in').send({ email: a.owner.email, password: 'wrong password' });
    expect((await request(h.web).post('/auth/sign-in').send({ email: a.owner.email, password: PASSWORD })).status).toBe(200);
    for (let i = 0; i < 9; i++) await request(h.web).post('/auth/sign-in').send({ email: a.owner.email, password: 'wrong password' });
    expect((await request(h.web).post('/auth/sign-in').send({ email: a.owner.email, password: PASSWORD })).status).toBe(200);
  });
});

describe('Bearer web sessions (Authentication rule 1): a web session as Authorization: Bearer on the web host', () => {
  async function signIn(email: string) {
    const res = await request(h.web).post('/auth/sign-in').send({ email, password: PASSWORD });
    expect(res.status).toBe(200);
    return res.body as { session_token: string; csrf_token: string; expires_at: string };
  }

  test('sign-in returns the session token in its body; it works as a Bearer on the web host, writes need no CSRF token', async () => {
    const a = await newAccount(h);
    const body = await signIn(a.owner.email);
    expect(body.session_token).toMatch(/^tc_ses_/);
    expect(Date.parse(body.expires_at)).toBeGreaterThan(Date.now());
    const read = await request(h.web).get(`/accounts/${a.accountId}`).set(bearer(body.session_token));
    expect(read.status).toBe(200);
    expect(read.body.your_role).toBe('owner');
    const write = await request(h.web).post(`/accounts/${a.accountId}/identities`).set(bearer(body.session_token)).send({ name: 'bot' });
    expect(write.status).toBe(201);
    // It acts as a web session: web-session-only endpoints accept it.
    const search = await request(h.web).get(`/accounts/${a.accountId}/search?q=x`).set(bearer(body.session_token));
    expect(search.status).toBe(200);
  });

  test('the cookie still needs X-CSRF-Token for writes', async () => {
    const a = await newAccount(h);
    const { agent } = await signInWeb(h, a.owner.email);
    const res = await agent.post(`/accounts/${a.accountId}/identities`).send({ name: 'bot' });
    expect(res.body.error).toMatchObject({ code: 'forbidden', reason: 'csrf' });
  });

  test('an unknown, ended or malformed session Bearer → 401 unauthorized', async () => {
    const a = await newAccount(h);
    const unknown = await request(h.web).get(`/accounts/${a.accountId}`).set(bearer('tc_ses_nope'));
    expect(unknown.status).toBe(401);
    expect(unknown.body.error.code).toBe('unauthorized');
    const body = await signIn(a.owner.email);
    expect((await request(h.web).post('/auth/sign-out').set(bearer(body.session_token))).status).toBe(200);
    const ended = await request(h.web).get(`/accounts/${a.accountId}`).set(bearer(body.session_token));
    expect(ended.status).toBe(401);
    const junk = await request(h.web).get(`/accounts/${a.accountId}`).set(bearer('whatever'));
    expect(junk.status).toBe(401);
  });

  test('a key or agent token as Bearer on the web host is still wrong_host; a session Bearer on the API host too', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['account:manage']);
    const agent = await newAgent(h, a.accountId, a.owner.email, []);
    for (const secret of [key, agent.token]) {
      const res = await request(h.web).post(`/accounts/${a.accountId}/identities`).set(bearer(secret)).send({ name: 'x' });
      expect(res.status).toBe(401);
      expect(res.body.error).toMatchObject({ code: 'unauthorized', reason: 'wrong_host', host: 'http://api.test' });
    }
    const body = await signIn(a.owner.email);
    const onApi = await request(h.api).get(`/accounts/${a.accountId}`).set(bearer(body.session_token));
    expect(onApi.status).toBe(401);
    expect(onApi.body.error).toMatchObject({ code: 'unauthorized', reason: 'wrong_host', host: 'http://web.test' });
  });
});
