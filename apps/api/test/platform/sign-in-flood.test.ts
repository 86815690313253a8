import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { PasswordHashingGate } from '@teamchat/core';
import { PASSWORD, newAccount, startHarness, uniqueEmail, type Harness } from '../../../../test/support/harness';

/** Rules: docs/api.md "Hosts and sessions", sign-in throttling. Behind one proxy (TRUST_PROXY), so X-Forwarded-For names the client. */
let h: Harness;
let server: http.Server;
let url: string;
beforeAll(async () => {
  h = await startHarness({ trustProxy: true });
  server = http.createServer({ maxHeaderSize: 16 * 1024 }, h.web);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  await h.close();
});

/** Fires `n` sign-ins with random emails at once from a child process; resolves with their answers. */
interface FloodAnswer { status: number; retryAfter: string | null; body: { error?: Record<string, unknown> } }
function floodFromChild(target: string, n: number, address: string): { sent: Promise<void>; answers: Promise<FloodAnswer[]> } {
  const script = `
    const n = ${n};
    const all = Promise.all(Array.from({ length: n }, (_, i) => fetch(${JSON.stringify(target)}, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': ${JSON.stringify(address)} },
      body: JSON.stringify({ email: 'flood-' + i + '-' + Math.random().toString(36).slice(2) + '@example.test', password: 'wrong password' }),
    }).then(async (r) => ({ status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.json() }))));
    process.stdout.write('sent\\n');
    all.then((answers) => process.stdout.write(JSON.stringify(answers)));
  `;
  let sent!: () => void;
  const sentP = new Promise<void>((r) => { sent = r; });
  const answers = new Promise<FloodAnswer[]>((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      if (out.startsWith('sent\n')) sent();
    });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.slice('sent\n'.length))) : reject(new Error(`flood exited ${code}`))));
  });
  return { sent: sentP, answers };
}

const signIn = (email: string, password: string, address: string) =>
  request(url).post('/auth/sign-in').set('X-Forwarded-For', address).send({ email, password });

describe('sign-in throttle: the attempt is reserved before the password is checked', () => {
  test('40 parallel wrong passwords for one email → at most 10 answers are 401, the rest 429 sign_in; the right password right after → 429', async () => {
    const a = await newAccount(h);
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => signIn(a.owner.email, `wrong ${i}`, `192.0.2.${i + 1}`)));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(10);
    expect(statuses.filter((s) => s !== 401).every((s) => s === 429)).toBe(true);
    for (const r of answers.filter((x) => x.status === 429)) {
      expect(r.body.error).toMatchObject({ code: 'rate_limited', scope: 'sign_in' });
      expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
    }
    const right = await signIn(a.owner.email, PASSWORD, '192.0.2.200');
    expect(right.status).toBe(429);
    expect(right.body.error).toMatchObject({ code: 'rate_limited', scope: 'sign_in' });
  });

  test('with the hashing bound out of the way, the Redis reservation alone lets exactly 10 of 40 parallel wrong passwords through', async () => {
    const gate = h.deps.passwordHashing;
    h.deps.passwordHashing = new PasswordHashingGate(1000, 1000);
    try {
      const a = await newAccount(h);
      const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => signIn(a.owner.email, `wrong ${i}`, `198.18.0.${i + 1}`)));
      const statuses = answers.map((r) => r.status);
      expect(statuses.filter((s) => s === 401)).toHaveLength(10);
      expect(statuses.filter((s) => s === 429)).toHaveLength(30);
      expect((await signIn(a.owner.email, PASSWORD, '198.18.1.1')).status).toBe(429);
    } finally {
      h.deps.passwordHashing = gate;
    }
  });

  test('one client address gets 60 attempts a minute, each counted before the password work; another address is not affected', async () => {
    const answers = await Promise.all(Array.from({ length: 70 }, () => signIn(uniqueEmail('nobody'), 'wrong password', '203.0.113.9')));
    expect(answers.every((r) => r.status === 401 || r.status === 429)).toBe(true);
    // The 10 beyond the address's 60 are refused by the address limit whatever the hashing bound did with the rest.
    expect(answers.filter((r) => r.status === 429 && /this address/.test(r.body.error.message)).length).toBeGreaterThanOrEqual(10);
    const a = await newAccount(h);
    const same = await signIn(a.owner.email, PASSWORD, '203.0.113.9');
    expect(same.status).toBe(429);
    expect(same.body.error).toMatchObject({ code: 'rate_limited', scope: 'sign_in' });
    expect(same.body.error.message).toMatch(/this address/);
    expect((await signIn(a.owner.email, PASSWORD, '203.0.113.10')).status).toBe(200);
  }, 60_000);
});

describe('sign-in flood: password hashing is bounded per process and per address', () => {
  test('300 concurrent sign-ins with random emails → a correct sign-in from another address answers 200 within 2 s (or 12 of its quiet times on a loaded machine); the excess answers 429 sign_in at once', async () => {
    const a = await newAccount(h);
    // One sign-in's time on this machine as it is now (the slowest of three): without the bound
    // the correct sign-in waits behind ~300 hashes on the thread pool (~75 of these times), with
    // it behind at most the flood address's few.
    let quiet = 0;
    for (let i = 0; i < 3; i++) {
      const t = Date.now();
      expect((await signIn(a.owner.email, PASSWORD, `198.51.100.${90 + i}`)).status).toBe(200);
      quiet = Math.max(quiet, Date.now() - t);
    }
    // The flood comes from another process, as an attacker's would: this process's event loop is the server's alone.
    const flood = floodFromChild(`${url}/auth/sign-in`, 300, '198.51.100.7');
    // Let the flood reach the server first.
    await flood.sent;
    await new Promise((r) => setTimeout(r, 200));
    const t0 = Date.now();
    const right = await signIn(a.owner.email, PASSWORD, '198.51.100.99');
    const ms = Date.now() - t0;
    expect(right.status).toBe(200);
    expect(ms).toBeLessThan(Math.max(2000, 12 * quiet));
    const answers = await flood.answers;
    expect(answers.every((r) => r.status === 401 || r.status === 429)).toBe(true);
    const refused = answers.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(200);
    expect(refused[0].body.error).toMatchObject({ code: 'rate_limited', scope: 'sign_in' });
    expect(Number(refused[0].retryAfter)).toBeGreaterThan(0);
  }, 60_000);

  test('TRUST_PROXY off (the default): X-Forwarded-For is ignored, the socket address counts', async () => {
    const plain = await startHarness();
    try {
      const app = plain.web;
      let ip: string | undefined;
      app.get('/__ip', (req, res) => { ip = req.ip; res.json({}); });
      await request(app).get('/__ip').set('X-Forwarded-For', '203.0.113.50');
      expect(ip).not.toBe('203.0.113.50');
    } finally {
      await plain.close();
    }
  });
});
