import { randomUUID } from 'node:crypto';
import { createEndpointRow } from '../../support/webhooks';
import { addToChannel, makeChannel, memberCaller, messagingAccount } from '../../support/messaging';
import type { Behaviour } from './receiver';
import { sleep, type Stack } from './stack';

/**
 * A tenant (one account) and real traffic against the API processes over HTTP. Every post
 * carries a unique `client_ref`, so the ledger can find out whether a post that got no 2xx
 * committed anyway; and mentions the next seat, so each post raises exactly two events
 * (`message.posted` and one `mention`): a ledger that checks "exactly its events" needs more
 * than one per post.
 */
export interface Seat {
  key: string;
  identityId: string;
}

export interface Tenant {
  accountId: string;
  ownerUserId: string;
  channelId: string;
  seats: Seat[];
  /** endpoint path on the receiver → endpoint id */
  endpoints: Map<string, string>;
}

export interface PostResult {
  ref: string;
  seat: number;
  /** HTTP status; 0 when the request itself failed (connection refused or reset, timeout) */
  status: number;
  code?: string;
  statusUrl?: string;
  error?: string;
  ts?: string;
  /** `Idempotent-Replayed: true` was answered */
  replayed?: boolean;
  at: number;
}

/**
 * An account with `seats` members (each with an API key, all in one channel) and one endpoint
 * per entry of `endpoints` (all events, all channels), each on its own receiver path.
 */
export async function tenant(s: Stack, opts: { seats: number; endpoints: Array<{ path: string; behaviour?: Behaviour }> }): Promise<Tenant> {
  const a = await messagingAccount(s.h);
  const channelId = await makeChannel(a.ownerApi);
  const seats: Seat[] = [];
  for (let i = 0; i < opts.seats; i++) {
    const m = await memberCaller(s.h, a.accountId);
    await addToChannel(a.ownerApi, channelId, m.identityId);
    seats.push({ key: m.key, identityId: m.identityId });
  }
  const endpoints = new Map<string, string>();
  for (const ep of opts.endpoints) {
    const row = await createEndpointRow(s.h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: s.rx.url(ep.path) });
    s.rx.route(ep.path, row.secret, ep.behaviour);
    endpoints.set(ep.path, row.id);
  }
  return { accountId: a.accountId, ownerUserId: a.owner.userId, channelId, seats, endpoints };
}

/** One post through an API process; never throws (the outcome is the result). */
export async function postOnce(s: Stack, t: Tenant, seat: number, opts: { api?: number; ref?: string; idempotencyKey?: string; text?: string } = {}): Promise<PostResult> {
  const ref = opts.ref ?? `f-${randomUUID()}`;
  const other = t.seats[(seat + 1) % t.seats.length].identityId;
  const headers: Record<string, string> = { authorization: `Bearer ${t.seats[seat].key}`, 'content-type': 'application/json' };
  if (opts.idempotencyKey) headers['idempotency-key'] = opts.idempotencyKey;
  const at = Date.now();
  try {
    const res = await fetch(`${s.apiUrl(opts.api ?? 0)}/accounts/${t.accountId}/channels/${t.channelId}/messages`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ text: opts.text ?? `load ${ref} for <@${other}>`, client_ref: ref }),
      signal: AbortSignal.timeout(60_000),
    });
    const body = (await res.json().catch(() => ({}))) as { ts?: string; error?: { code?: string; status_url?: string } };
    return {
      ref, seat, status: res.status, code: body.error?.code, statusUrl: body.error?.status_url, ts: body.ts,
      replayed: res.headers.get('idempotent-replayed') === 'true', at,
    };
  } catch (err) {
    return { ref, seat, status: 0, error: (err as Error).message, at };
  }
}

export interface Load {
  results: PostResult[];
  /** stops the load and waits for the posts in flight */
  stop(): Promise<PostResult[]>;
}

/**
 * Steady load: every seat posts one message every `intervalMs` (default 1500 ms, 40 a minute,
 * under the Pro plan's 60 calls per minute per seat, so the real limits never refuse), spread
 * over the API processes.
 */
export function startLoad(s: Stack, t: Tenant, opts: { intervalMs?: number } = {}): Load {
  const results: PostResult[] = [];
  const interval = opts.intervalMs ?? 1500;
  let running = true;
  let n = 0;
  const loops = t.seats.map(async (_seat, i) => {
    await sleep(Math.floor((interval * i) / t.seats.length)); // spread the seats over the interval
    while (running) {
      const started = Date.now();
      const api = n++ % s.apis.length;
      results.push(await postOnce(s, t, i, { api }));
      await sleep(Math.max(0, interval - (Date.now() - started)));
    }
  });
  return {
    results,
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return results;
    },
  };
}

/** Waits until `n` posts have been answered 2xx since `from` (index into results). */
export async function waitForPosts(load: Load, n: number, timeoutMs = 120_000, from = 0): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (load.results.slice(from).filter((r) => r.status >= 200 && r.status < 300).length < n) {
    if (Date.now() > deadline) {
      const seen: Record<string, number> = {};
      for (const r of load.results.slice(from)) {
        const k = `${r.status}${r.code ? ` ${r.code}` : ''}${r.error ? ` ${r.error}` : ''}`;
        seen[k] = (seen[k] ?? 0) + 1;
      }
      throw new Error(`fewer than ${n} posts answered 2xx in ${timeoutMs} ms; answers: ${JSON.stringify(seen)}`);
    }
    await sleep(100);
  }
}
