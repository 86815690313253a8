import express from 'express';
import request from 'supertest';
import { Test } from 'supertest';
import { responseProblem } from '../../../../test/support/openapi-check';
import { startHarness, type Harness } from '../../../../test/support/harness';

/**
 * The document and the reference on both hosts (docs/api.md "The OpenAPI document"), and the
 * check every API test's responses go through (test/support/openapi-responses.ts).
 */
let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

describe('GET /openapi.json and GET /docs on both hosts, without a credential', () => {
  test.each(['api', 'web'] as const)('%s host: the document names the host that served it', async (host) => {
    const res = await request(h[host]).get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body.openapi).toBe('3.1.1');
    const url = host === 'api' ? h.deps.config.publicApiUrl : h.deps.config.publicWebUrl;
    expect(res.body.servers).toEqual([expect.objectContaining({ url })]);
    // The web host's own routes name it, wherever the document is served.
    expect(res.body.paths['/auth/sign-in'].post.servers).toEqual([expect.objectContaining({ url: h.deps.config.publicWebUrl })]);
    expect(Object.keys(res.body.paths).length).toBeGreaterThan(25);
  });

  test.each(['api', 'web'] as const)('%s host: /docs is Redoc from this origin, with nothing loaded from elsewhere', async (host) => {
    const page = await request(h[host]).get('/docs');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.text).toContain('<redoc spec-url="/openapi.json">');
    expect(page.text).toContain('<script src="/docs/redoc.standalone.js">');
    expect(page.text).not.toMatch(/https?:\/\//);
    const policy = page.headers['content-security-policy'];
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("font-src 'self'");
    expect(policy).not.toMatch(/https?:/);

    const script = await request(h[host]).get('/docs/redoc.standalone.js');
    expect(script.status).toBe(200);
    expect(script.headers['content-type']).toMatch(/^text\/javascript/);
    expect(Number(script.headers['content-length'])).toBeGreaterThan(500_000);
  });
});

describe('every API response in the tests is checked against the document', () => {
  test('the check is installed for every test file', () => {
    expect((Test.prototype as unknown as { __openapiChecked?: boolean }).__openapiChecked).toBe(true);
  });

  test('a body that does not match its schema, an undeclared status, or a non-error body on an unknown path is a problem', () => {
    const json = { 'content-type': 'application/json; charset=utf-8' };
    expect(responseProblem('api', 'GET', '/healthz', { status: 200, headers: json, body: { status: 'ok', host: 'api' } })).toBeNull();
    expect(responseProblem('api', 'GET', '/healthz', { status: 200, headers: json, body: { status: 'ok' } })).toMatch(/does not match liveness's 200 schema/);
    expect(responseProblem('api', 'GET', '/healthz', { status: 201, headers: json, body: {} })).toMatch(/does not declare/);
    expect(responseProblem('api', 'GET', '/accounts/acct_x/channels', { status: 403, headers: json, body: { error: { code: 'forbidden', message: 'm', reason: 'nope' } } }))
      .toMatch(/does not match listChannels's 403 schema/);
    expect(responseProblem('api', 'GET', '/nowhere', { status: 404, headers: json, body: { error: { code: 'not_found', message: 'No such endpoint.' } } })).toBeNull();
    expect(responseProblem('api', 'GET', '/nowhere', { status: 200, headers: json, body: { ok: true } })).toMatch(/no operation serves it/);
    // /auth/* is the web host's: on the API host it is a path no operation serves.
    expect(responseProblem('api', 'POST', '/auth/sign-in', { status: 401, headers: json, body: { error: { code: 'unauthorized', message: 'm', reason: 'wrong_host', host: 'x' } } })).toBeNull();
  });

  test('a response that does not match fails the request that received it', async () => {
    const wrong = express();
    wrong.set('public host', 'api');
    wrong.get('/healthz', (_req, res) => { res.json({ status: 'not ok' }); });
    await expect(request(wrong).get('/healthz')).rejects.toThrow(/does not match liveness's 200 schema/);
    // Apps that are not the API's (the MCP server, test receivers) are not checked.
    const other = express();
    other.get('/healthz', (_req, res) => { res.json({ anything: true }); });
    await expect(request(other).get('/healthz')).resolves.toMatchObject({ status: 200 });
  });
});
