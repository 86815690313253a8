import { formatTs, isFannedOutEventType } from '@teamchat/core';
import { sql } from '@teamchat/db';
import type { PostResult, Tenant } from './traffic';
import { sleep, type Stack } from './stack';

/**
 * The ledger of a scenario: what the clients were told, what PostgreSQL holds, what the
 * receivers got. The rules (docs/operations.md, "Proof: the fault suite"):
 * - every post answered 2xx is one message; a post that got anything else is either absent or
 *   present with all its events (found by its client_ref), never half there;
 * - every message has exactly its events (`message.posted` + one `mention` of the seat it named);
 * - every event reached every endpoint that must have it (verified signature, answered 2xx);
 *   duplicates by event id are counted, never an error;
 * - no delivery row is left open once the system settled, and every event was relayed.
 */
export interface EndpointLedger {
  path: string;
  /** events the endpoint should have (all the tenant's events) */
  expected: number;
  received: number;
  missing: string[];
  /** 2xx answers beyond the first per event id (at-least-once: the receiver deduped them) */
  duplicates: number;
  /** every verified request, retries included */
  requests: number;
  badSignatures: number;
  /** the delivery log's rows by status */
  log: Record<string, number>;
}

export interface Ledger {
  scenario: string;
  posts: number;
  answered2xx: number;
  answeredOther: Record<string, number>;
  /** non-2xx posts that committed anyway (found by client_ref, with all their events) */
  committedDespiteError: number;
  /** 5xx answers lacking `code: internal` or `status_url` (spec: Errors) */
  bad5xx: number;
  messages: number;
  /** 2xx posts without their message, or a client_ref stored twice */
  lostPosts: string[];
  events: number;
  /** messages whose events are not exactly message.posted + their mentions */
  wrongEvents: string[];
  unrelayed: number;
  /** slowest event → its first delivery row (relay + fan-out), and → its last endpoint's 2xx, in seconds */
  maxFanoutS: number;
  maxDeliveredS: number;
  endpoints: EndpointLedger[];
}

type EventRow = { id: string; type: string; channel_id: string; ts: string | null };

/** The tenant's events that fan out (`channel.created` and the like are recorded but never sent). */
export async function eventsOfTenant(s: Stack, t: Tenant): Promise<EventRow[]> {
  const r = await s.h.deps.database.db.execute<EventRow>(sql`
    SELECT id, type, channel_id, data->>'ts' AS ts FROM events WHERE account_id = ${t.accountId} ORDER BY seq`);
  return r.rows.filter((e) => isFannedOutEventType(e.type));
}

/** Polls until every endpoint in `complete` has accepted every event of the tenant and no delivery is open; false at the deadline. */
export async function settle(s: Stack, t: Tenant, complete: string[], timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const evs = await eventsOfTenant(s, t).catch(() => null);
    if (evs) {
      const allIn = complete.every((p) => evs.every((e) => s.rx.log(p).accepted.has(e.id)));
      const open = await s.h.deps.database.db.execute<{ n: number }>(sql`
        SELECT count(*)::int AS n FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
         WHERE e.account_id = ${t.accountId} AND d.status IN ('pending', 'retrying')`).catch(() => null);
      const unrelayed = await s.h.deps.database.db.execute<{ n: number }>(sql`
        SELECT count(*)::int AS n FROM events WHERE account_id = ${t.accountId} AND relayed_at IS NULL`).catch(() => null);
      if (allIn && open && unrelayed && unrelayed.rows[0].n === 0 && open.rows[0].n === 0) return true;
    }
    if (Date.now() > deadline) return false;
    await sleep(500);
  }
}

export async function buildLedger(s: Stack, scenario: string, t: Tenant, posts: PostResult[], complete: string[]): Promise<Ledger> {
  const db = s.h.deps.database.db;
  const msgs = (await db.execute<{ client_ref: string; channel_id: string; ts_micros: string; author_identity_id: string; mentions: string[] }>(sql`
    SELECT client_ref, channel_id, ts_micros::text AS ts_micros, author_identity_id, mentions
      FROM messages WHERE account_id = ${t.accountId} AND client_ref IS NOT NULL`)).rows;
  const evs = await eventsOfTenant(s, t);
  const byMessage = new Map<string, EventRow[]>();
  for (const e of evs) {
    const k = `${e.channel_id}/${e.ts}`;
    byMessage.set(k, [...(byMessage.get(k) ?? []), e]);
  }
  const byRef = new Map<string, typeof msgs>();
  for (const m of msgs) byRef.set(m.client_ref, [...(byRef.get(m.client_ref) ?? []), m]);

  const answeredOther: Record<string, number> = {};
  let answered2xx = 0;
  let committedDespiteError = 0;
  let bad5xx = 0;
  const lostPosts: string[] = [];
  const refs = new Set<string>();
  for (const p of posts) {
    refs.add(p.ref);
    const found = byRef.get(p.ref) ?? [];
    if (found.length > 1) lostPosts.push(`${p.ref}: stored ${found.length} times`);
    if (p.status >= 200 && p.status < 300) {
      answered2xx += 1;
      if (found.length === 0) lostPosts.push(`${p.ref}: answered ${p.status}, no message`);
    } else {
      const k = p.status === 0 ? 'no answer' : `${p.status}${p.code ? ` ${p.code}` : ''}`;
      answeredOther[k] = (answeredOther[k] ?? 0) + 1;
      if (found.length > 0) committedDespiteError += 1;
      if (p.status >= 500 && (p.code !== 'internal' || !p.statusUrl)) bad5xx += 1;
    }
  }
  const wrongEvents: string[] = [];
  let ourEvents = 0;
  for (const m of msgs) {
    if (!refs.has(m.client_ref)) continue; // another scenario step's message (none today)
    const got = (byMessage.get(`${m.channel_id}/${formatTs(BigInt(m.ts_micros))}`) ?? []).map((e) => e.type).sort();
    const want = ['message.posted', ...m.mentions.filter((x) => x !== m.author_identity_id).map(() => 'mention')].sort();
    ourEvents += got.length;
    if (m.mentions.length !== 1 || JSON.stringify(got) !== JSON.stringify(want)) wrongEvents.push(`${m.client_ref}: events [${got.join(',')}], want [${want.join(',')}] (mentions ${m.mentions.length})`);
  }
  const unrelayed = Number((await db.execute<{ n: number }>(sql`
    SELECT count(*)::int AS n FROM events WHERE account_id = ${t.accountId} AND relayed_at IS NULL`)).rows[0].n);

  const lag = (await db.execute<{ fanout: number | null; delivered: number | null }>(sql`
    SELECT max(f) AS fanout, max(d) AS delivered FROM (
      SELECT extract(epoch FROM min(w.created_at) - e.created_at)::float8 AS f,
             extract(epoch FROM max(w.attempted_at) FILTER (WHERE w.status = 'delivered') - e.created_at)::float8 AS d
        FROM events e JOIN webhook_deliveries w ON w.event_id = e.id
       WHERE e.account_id = ${t.accountId} GROUP BY e.id, e.created_at) x`)).rows[0];
  const endpoints: EndpointLedger[] = [];
  for (const [path, endpointId] of t.endpoints) {
    const log = s.rx.log(path);
    const statusRows = (await db.execute<{ status: string; n: number }>(sql`
      SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = ${endpointId} GROUP BY status ORDER BY status`)).rows;
    const isComplete = complete.includes(path);
    endpoints.push({
      path,
      expected: isComplete ? evs.length : 0,
      received: log.accepted.size,
      missing: isComplete ? evs.filter((e) => !log.accepted.has(e.id)).map((e) => e.id) : [],
      duplicates: [...log.acceptedTimes.values()].reduce((n, c) => n + c - 1, 0),
      requests: log.requests.length,
      badSignatures: log.badSignatures,
      log: Object.fromEntries(statusRows.map((r) => [r.status, r.n])),
    });
  }
  return {
    scenario,
    posts: posts.length,
    answered2xx,
    answeredOther,
    committedDespiteError,
    bad5xx,
    messages: msgs.filter((m) => refs.has(m.client_ref)).length,
    lostPosts,
    events: ourEvents,
    wrongEvents,
    unrelayed,
    maxFanoutS: Number(lag?.fanout ?? 0),
    maxDeliveredS: Number(lag?.delivered ?? 0),
    endpoints,
  };
}

/** The ledger as a few lines on stdout (process.stdout: Jest's console would wrap each in a stack trace). */
export function printLedger(l: Ledger, extra: string[] = []): void {
  const other = Object.entries(l.answeredOther).map(([k, v]) => `${k}: ${v}`).join(', ') || 'none';
  const lines = [
    `LEDGER ${l.scenario}`,
    `  posts ${l.posts} | 2xx ${l.answered2xx} | other ${other} | committed despite error ${l.committedDespiteError} | 5xx without internal+status_url ${l.bad5xx}`,
    `  messages ${l.messages} | lost posts ${l.lostPosts.length} | events ${l.events} | messages with wrong events ${l.wrongEvents.length} | unrelayed ${l.unrelayed} | slowest fan-out ${l.maxFanoutS.toFixed(1)} s, slowest delivered ${l.maxDeliveredS.toFixed(1)} s`,
    ...l.endpoints.map((e) => `  endpoint ${e.path.padEnd(12)} expected ${String(e.expected).padStart(5)} | received ${String(e.received).padStart(5)} | missing ${String(e.missing.length).padStart(3)} | duplicates ${String(e.duplicates).padStart(3)} | requests ${String(e.requests).padStart(5)} | bad signatures ${e.badSignatures} | log ${JSON.stringify(e.log)}`),
    ...extra.map((x) => `  ${x}`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** The assertions every scenario shares: nothing lost, nothing half-committed, nothing unsigned. */
export function expectNothingLost(l: Ledger): void {
  expect(l.lostPosts).toEqual([]);
  expect(l.wrongEvents).toEqual([]);
  expect(l.bad5xx).toBe(0);
  expect(l.unrelayed).toBe(0);
  expect(l.events).toBeGreaterThan(0);
  for (const e of l.endpoints) {
    expect({ path: e.path, missing: e.missing }).toEqual({ path: e.path, missing: [] });
    expect({ path: e.path, badSignatures: e.badSignatures }).toEqual({ path: e.path, badSignatures: 0 });
  }
}
