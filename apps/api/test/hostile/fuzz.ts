import fc from 'fast-check';
import request from 'supertest';
import type { Express } from 'express';
import { ERROR_STATUS, GRANTABLE_SCOPES } from '@teamchat/core';
import { PASSWORD, addPerson, bearer, newAccount, newKey, signInWeb, startHarness, type Harness } from '../../../../test/support/harness';
import { bodyFor, headersArb, queryFor, segment, type HeaderSet } from './arbitraries';
import { rowsFor, type Host, type RouteRow } from './routes';

/**
 * docs/api.md 'Hostile input': for every route of one host, hostile paths, queries, headers and bodies answer
 * 2xx or 4xx with the spec's error body; never a 5xx, never a stack trace. Fixed seed, bounded
 * runs: the same requests every run, so a failure reproduces.
 */
export const SEED = 7_2025;
/** Runs per route and host: with ~30 routes per host, both host files together take about 40 s on 2 cores. */
export const RUNS = 80;

/** Longest URL sent: under Node's 16 KB header limit, with room for the headers. */
const URL_MAX = 12_000;

interface Fixture {
  h: Harness;
  app: Express;
  /** the account owner's email (the web host's fresh sessions sign in as them) */
  email: string;
  /** credential headers for this host: a key on the API host, cookie + CSRF on the web host */
  auth: () => Promise<Record<string, string>>;
  /** a valid value for each path parameter, so requests also get past the first check */
  valid: Record<string, string[]>;
  cursors: string[];
}

async function fixture(host: Host): Promise<Fixture> {
  const h = await startHarness();
  const a = await newAccount(h);
  const other = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, [...GRANTABLE_SCOPES]);
  const base = `/accounts/${a.accountId}`;
  const api = (method: 'get' | 'post' | 'delete', path: string, body?: object) => request(h.api)[method](base + path).set(bearer(key)).send(body);
  const channels = [];
  for (const name of ['general', 'random']) channels.push((await api('post', '/channels', { name })).body.id as string);
  const root = (await api('post', `/channels/${channels[0]}/messages`, { text: 'root' })).body.ts as string;
  await api('post', `/channels/${channels[0]}/messages`, { text: 'reply', thread_ts: root });
  const doomed = (await api('post', `/channels/${channels[0]}/messages`, { text: 'to delete' })).body.ts as string;
  const approvalId = (await api('delete', `/channels/${channels[0]}/messages/${doomed}`)).body.error.approval_id as string;
  const agent = (await api('post', '/identities', { name: 'fuzz-agent' })).body.id as string;
  const dm = await api('post', '/dms', { members: [agent] });
  // Sign-in runs use another person, so their failures never throttle the owner's sign-ins.
  const signInEmail = (await addPerson(h, a.accountId, 'member')).email;

  let auth: Fixture['auth'];
  let get: (path: string) => request.Test;
  if (host === 'api') {
    auth = async () => bearer(key);
    get = (path) => request(h.api).get(path).set(bearer(key));
  } else {
    const session = sessionHeaders(await signInWeb(h, a.owner.email));
    auth = async () => session;
    get = (path) => request(h.web).get(path).set(session);
  }
  // Real cursors of this caller (each list has more than one row), to truncate and tamper with.
  const cursors: string[] = [];
  for (const list of ['/channels', `/channels/${channels[0]}/messages`, `/channels/${channels[0]}/members`, '/identities', '/audit', '/api-keys']) {
    const res = await get(`${base}${list}?limit=1`);
    if (res.body.next_cursor) cursors.push(res.body.next_cursor);
  }
  if (cursors.length < 3) throw new Error(`fixture: expected real cursors, got ${cursors.length}`);
  return {
    h,
    email: a.owner.email,
    app: host === 'api' ? h.api : h.web,
    auth,
    valid: {
      accountId: [a.accountId, other.accountId],
      channelId: [...channels, dm.body.id],
      ts: [root, doomed],
      threadTs: [root],
      emoji: ['thumbsup', '+1'],
      jobId: ['job_0000000000000000'],
      approvalId: [approvalId],
      fileId: ['file_0000000000000000'],
      rest: ['sign-in', 'x/y'],
      // body values for the rows' examples
      identityId: [agent],
      email: [signInEmail],
      password: [PASSWORD],
    },
    cursors,
  };
}

interface HostileRequest {
  method: string;
  url: string;
  headers: HeaderSet;
  body: string | undefined;
}

function requestArb(row: RouteRow, fx: Fixture): fc.Arbitrary<HostileRequest> {
  const names = [...row.path.matchAll(/:(\w+)|\{\*(\w+)\}/g)].map((m) => m[1] ?? m[2]);
  const segments = fc.tuple(...names.map((n) => segment(fx.valid[n]?.[0]).chain((s) =>
    fx.valid[n] && fx.valid[n].length > 1 ? fc.oneof(fc.constant(s), fc.constantFrom(...fx.valid[n])) : fc.constant(s))));
  const method = row.method === 'ALL' ? fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE') : fc.constant(row.method);
  const firsts = Object.fromEntries(Object.entries(fx.valid).map(([k, v]) => [k, v[0]]));
  return fc.record({ method, segments, query: queryFor(row, fx.cursors), headers: headersArb, body: bodyFor(row, firsts) }).map(({ method: m, segments: segs, query, headers, body }) => {
    let i = 0;
    const path = row.path.replace(/:(\w+)|\{\*(\w+)\}/g, () => segs[i++]);
    // Node's HTTP parser refuses the request before the app when the request line and headers
    // pass 16 KB (docs/api.md "Hostile input"; http-parser.test.ts covers that answer); cutting
    // the URL also cuts percent-escapes in two.
    return { method: m, url: (query ? `${path}?${query}` : path).slice(0, URL_MAX), headers, body };
  });
}

async function send(fx: Fixture, host: Host, row: RouteRow, r: HostileRequest): Promise<request.Response> {
  let t = (request(fx.app) as any)[r.method.toLowerCase()](r.url) as request.Test;
  const auth = row.endsSession ? await freshSession(fx) : await fx.auth();
  for (const [k, v] of Object.entries(auth)) t = t.set(k, v);
  const hd = r.headers;
  if (hd.authorization !== undefined) t = t.set('Authorization', hd.authorization);
  if (hd.csrf !== undefined && host === 'web') t = t.set('X-CSRF-Token', hd.csrf);
  if (hd.cookie !== undefined) t = t.set('Cookie', hd.cookie);
  if (hd.idempotencyKey !== undefined) t = t.set('Idempotency-Key', hd.idempotencyKey);
  if (hd.ifMatch !== undefined) t = t.set('If-Match', hd.ifMatch);
  if (hd.requestId !== undefined) t = t.set('X-Request-Id', hd.requestId);
  if (hd.accept !== undefined) t = t.set('Accept', hd.accept);
  if (r.body !== undefined && r.method !== 'GET') {
    t = t.set('Content-Type', hd.contentType ?? 'application/json');
    if (hd.contentEncoding !== undefined) t = t.set('Content-Encoding', hd.contentEncoding);
    t = t.serialize((b: string) => b).send(r.body);
  }
  return t;
}

/** Sign-out ends the session it is called with, so each of its runs signs in anew. */
async function freshSession(fx: Fixture): Promise<Record<string, string>> {
  return sessionHeaders(await signInWeb(fx.h, fx.email));
}

const sessionHeaders = (w: Awaited<ReturnType<typeof signInWeb>>) =>
  ({ Cookie: w.cookie.map((c) => c.split(';')[0]).join('; '), 'X-CSRF-Token': w.csrf });

const STACK = /\n\s+at |\bat \S+ \(|node_modules|\.ts:\d+|\.js:\d+/;

/** The spec's answer to bad input: 2xx or 4xx; an error is `{ error: { code, message, ... } }` with a spec code. */
function check(r: HostileRequest, res: request.Response): void {
  const problem = (why: string) =>
    new Error(`${why}\n${r.method} ${r.url.slice(0, 300)}\n→ ${res.status} ${(res.text ?? "").slice(0, 500)}`);
  if (res.status >= 500) throw problem('5xx');
  if (res.status < 200 || (res.status >= 300 && res.status < 400)) throw problem('neither 2xx nor 4xx');
  if (!res.headers['x-request-id']) throw problem('no X-Request-Id');
  // The reference's script (Redoc's bundle) is JavaScript source, which reads like a trace.
  if (!/javascript/.test(res.headers['content-type'] ?? '') && STACK.test(res.text ?? '')) throw problem('looks like a stack trace');
  if (res.status >= 400) {
    const error = res.body?.error;
    const code = error?.code as keyof typeof ERROR_STATUS | undefined;
    if (!error || typeof error.message !== 'string' || !code || !(code in ERROR_STATUS)) throw problem('not the spec error body');
    if (ERROR_STATUS[code] !== res.status || code === 'internal') throw problem(`code ${code} with status ${res.status}`);
    if (Object.keys(res.body).length !== 1) throw problem('error body has fields beside `error`');
  }
}

/** One test per route of `host`: the property over hostile requests. */
export function hostileSuite(host: Host): void {
  let fx: Fixture;
  beforeAll(async () => { fx = await fixture(host); }, 60_000);
  afterAll(async () => { await fx.h.close(); });

  describe.each(rowsFor(host).map((row) => [`${row.method} ${row.path}`, row] as const))('%s', (_name, row) => {
    test(`answers 2xx or 4xx with the spec's error body, never 5xx (${row.runs ?? RUNS} runs, seed ${SEED})`, async () => {
      await fc.assert(
        // Shrinking re-sends requests; a bounded number keeps a failure's report quick.
        fc.asyncProperty(fc.limitShrink(requestArb(row, fx), 40), async (r) => {
          check(r, await send(fx, host, row, r));
        }),
        { seed: SEED, numRuns: row.runs ?? RUNS },
      );
    }, 180_000);
  });
}
