import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import SwaggerParser from '@apidevtools/swagger-parser';
import { EVENT_TYPES, eventBody, type EventDataByType, type RowEventType } from '@teamchat/core';
import { ROUTES, buildDocument, errorsOf, hostsOf, type RouteDeclaration } from '../src';

/**
 * The OpenAPI document (docs/api.md "The OpenAPI document"): generated from the route
 * declarations, committed current (with the client's types), valid for two independent tools,
 * and complete: every route, its security, its errors; every event type with bodies that match.
 */
const ROOT = path.resolve(__dirname, '../../..');
const doc = buildDocument() as Record<string, any>;
const committed = JSON.parse(fs.readFileSync(path.join(ROOT, 'docs/openapi.json'), 'utf8'));

describe('the committed document and client', () => {
  test('docs/openapi.json, the webhook examples and the client types are what npm run docs:openapi writes', () => {
    const run = spawnSync(process.execPath, [require.resolve('tsx/cli'), 'scripts/docs-openapi.ts', '--check'], { cwd: ROOT, encoding: 'utf8' });
    expect({ status: run.status, stderr: run.stderr.trim() }).toEqual({ status: 0, stderr: '' });
  }, 120_000);

  test('the committed document is the generated one', () => {
    expect(committed).toEqual(JSON.parse(JSON.stringify(doc)));
  });
});

describe('validated by two independent tools', () => {
  test('@apidevtools/swagger-parser: valid OpenAPI 3.1, every $ref resolves', async () => {
    await expect(SwaggerParser.validate(structuredClone(committed))).resolves.toBeTruthy();
  });

  /** Warnings that stay, with their reason (docs/api.md "The OpenAPI document"). */
  const ACCEPTED_WARNINGS = {
    // (every operation has a 4xx: the HTTP parser's refusals, answered on every route)
    // the committed document names the default development hosts; the served one names the configured host
    'no-server-example.com': 5,
  };

  test('@redocly/cli lint (recommended rules): no error, and only the accepted warnings', () => {
    const run = spawnSync(process.execPath, [require.resolve('@redocly/cli/bin/cli.js'), 'lint', 'docs/openapi.json', '--format=json'], {
      cwd: ROOT, encoding: 'utf8', env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }, timeout: 110_000,
    });
    const out = JSON.parse(run.stdout) as { totals: { errors: number; warnings: number }; problems: Array<{ ruleId: string; severity: string }> };
    const warnings: Record<string, number> = {};
    for (const p of out.problems) if (p.severity === 'warn') warnings[p.ruleId] = (warnings[p.ruleId] ?? 0) + 1;
    expect(out.problems.filter((p) => p.severity === 'error')).toEqual([]);
    expect(warnings).toEqual(ACCEPTED_WARNINGS);
  }, 120_000);
});

describe('complete', () => {
  const op = (r: RouteDeclaration) => doc.paths[r.path]?.[r.method.toLowerCase()];

  test('every declared route is an operation, named by its id, with the hosts that serve it', () => {
    for (const r of ROUTES as readonly RouteDeclaration[]) {
      expect(op(r)).toMatchObject({ operationId: r.id, 'x-hosts': [...hostsOf(r)] });
    }
    const count = Object.values(doc.paths as Record<string, object>).reduce((n, item) => n + Object.keys(item).length, 0);
    expect(count).toBe(ROUTES.length);
  });

  test('security: public routes need nothing; web-session-only routes never accept a credential; the rest name their scope', () => {
    for (const r of ROUTES as readonly RouteDeclaration[]) {
      const schemes = (op(r).security as Array<Record<string, string[]>>).map((s) => Object.keys(s).sort().join('+'));
      if (r.access === 'public') expect(schemes).toEqual([]);
      else if (r.access === 'web_session') expect(schemes).not.toContain('credential');
      else expect(op(r).security[0]).toEqual({ credential: r.scope ? [r.scope] : [] });
      if (r.access !== 'public') expect(schemes).toEqual(expect.arrayContaining(['webSession', expect.stringMatching(/^(csrfToken\+)?webSessionCookie$/)]));
    }
  });

  test("every error code and reason a route can answer is enumerated in its responses", () => {
    const refs = (o: any): string[] => JSON.stringify(o).match(/#\/components\/schemas\/Error\.[^"]+/g) ?? [];
    for (const r of ROUTES as readonly RouteDeclaration[]) {
      const names = refs(op(r).responses).map((ref) => ref.slice('#/components/schemas/'.length));
      for (const [code, reasons] of Object.entries(errorsOf(r))) {
        const name = names.find((n) => n.split('.')[1] === code);
        expect({ route: r.id, code, found: name && [...name.split('.').slice(2)].sort() }).toEqual({ route: r.id, code, found: [...reasons!].sort() });
      }
    }
  });

  test('lists take limit and cursor and answer { data, next_cursor }; creating POSTs take Idempotency-Key', () => {
    for (const r of ROUTES as readonly RouteDeclaration[]) {
      const params = JSON.stringify(op(r).parameters);
      expect(params.includes('#/components/parameters/cursor')).toBe(Boolean(r.list));
      expect(params.includes('#/components/parameters/Idempotency-Key')).toBe(Boolean(r.creating));
      if (r.list) {
        const schema = op(r).responses['200'].content['application/json'].schema;
        const page = doc.components.schemas[schema.$ref.split('/').pop()];
        expect(page.required).toEqual(['data', 'next_cursor']);
      }
    }
  });
});

describe('webhooks: one entry per event type, bodies as the renderer writes them', () => {
  const ajv = new Ajv2020({ strict: false });
  addFormats(ajv);
  ajv.addSchema(doc, 'openapi');
  const bodySchema = (type: string) => ajv.compile({ $ref: `openapi#/webhooks/${encodeURIComponent(type)}/post/requestBody/content/application~1json/schema` });

  test('every event type, with the delivery headers and both signature schemes', () => {
    expect(Object.keys(doc.webhooks)).toEqual([...EVENT_TYPES]);
    for (const type of EVENT_TYPES) {
      const post = doc.webhooks[type].post;
      expect(post.security).toEqual([{ serviceSignature: [] }, { standardWebhooksSignature: [] }]);
      expect(JSON.stringify(post.parameters)).toContain('webhook.X-Service-Signature');
      expect(JSON.stringify(post.parameters)).toContain('webhook.webhook-signature');
    }
  });

  test('the examples of docs/webhooks.md match their schemas', () => {
    let checked = 0;
    for (const type of EVENT_TYPES) {
      const examples = doc.webhooks[type].post.requestBody.content['application/json'].examples ?? {};
      const validate = bodySchema(type);
      for (const [name, ex] of Object.entries(examples as Record<string, { value: unknown }>)) {
        expect({ type, name, ok: validate(ex.value), errors: validate.errors ?? null }).toEqual({ type, name, ok: true, errors: null });
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(10);
  });

  const pointers = { channel: { id: 'ch_1', kind: 'channel' as const }, ts: '1741064767.089123', author: 'idn_a', thread_ts: null, session: null, links_count: 1, attachments_count: 0 };
  const content = { text: 'hello <@idn_b>', links: ['https://ci.example/run/1'] };
  const DATA: { [T in RowEventType]: EventDataByType[T] } = {
    'message.posted': { ...pointers, mentions: ['idn_b'], broadcast: false, content },
    'message.edited': { ...pointers, version: 2, edited_by: 'idn_a', content },
    'message.deleted': { ...pointers, deleted_by: 'idn_a' },
    'thread.replied': { ...pointers, thread_ts: '1741064700.000001', parent_author: 'idn_b', content },
    mention: { ...pointers, broadcast: true, broadcast_kind: 'here', from: 'idn_a', content },
    'dm.received': { ...pointers, channel: { id: 'ch_2', kind: 'dm' }, to: 'idn_b', session: { client: 'c', version: '1' }, content },
    'reaction.added': { ...pointers, emoji: 'tada', by: 'idn_b' },
    'reaction.removed': { ...pointers, emoji: 'tada', by: 'idn_b' },
    'channel.created': { channel: { id: 'ch_1', kind: 'channel' }, by: 'idn_a' },
    'channel.deleted': { channel: { id: 'ch_1', kind: 'channel' }, by: 'idn_a' },
    'session.evicted': {
      user_id: 'usr_1', identity_id: 'idn_a', credential_id: 'crd_1', session: { client: 'c', version: '1' },
      opened_at: '2025-03-04T05:06:07.089Z', last_used_at: '2025-03-04T05:06:07.089Z', reason: 'seat_session_cap', cap: 5,
    },
  };

  test.each(Object.keys(DATA))('%s: the rendered body in both payload modes matches its schema', (type) => {
    const validate = bodySchema(type);
    for (const mode of ['pointers', 'text'] as const) {
      const body = eventBody({ id: 'evt_1', type, accountId: 'acct_1', createdAt: new Date(), data: DATA[type as RowEventType] }, mode);
      expect({ mode, ok: validate(body), errors: validate.errors ?? null }).toEqual({ mode, ok: true, errors: null });
    }
  });
});
