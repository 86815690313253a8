import { createHash } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import fs from 'node:fs';
import { isIP } from 'node:net';
import tls from 'node:tls';
import { buildConnector, Pool } from 'undici';
import type { Config, VettedUrl } from '@teamchat/core';

/**
 * The HTTP side of an attempt: undici keep-alive pools, one per (origin, vetted address). The
 * pool's connector dials the address the URL guard vetted (never resolving the name again) and
 * keeps the host name for TLS (SNI and certificate check) and the Host header. Redirects are
 * never followed (undici follows none without its redirect interceptor): a 3xx is a failure.
 */
export interface PostResult {
  /** the receiver's status, or null when it did not answer (timeout, refused, reset, TLS) */
  status: number | null;
  latencyMs: number;
  /** why the attempt failed at the transport level, or null */
  error: string | null;
}

/** Pools idle this long are closed and forgotten. */
const POOL_IDLE_MS = 5 * 60_000;
/**
 * Connections per pool (one pool per receiver origin and vetted address, shared by every
 * account's endpoints on that host): room for 8 accounts at the largest in-flight cap (16) before
 * attempts queue inside undici. Many accounts often post to one receiver host; with 32, a bench
 * of 32 accounts × 4 slots against one host queued 4 deep and delivered ~30 % less (docs/performance.md).
 */
const POOL_CONNECTIONS = 128;
/** Bytes of a receiver's answer read before the connection is dropped (the body is ignored). */
const MAX_BODY_BYTES = 64 * 1024;

interface PoolEntry {
  pool: Pool;
  lastUsed: number;
}

/** How often the transport's one deadline timer looks for attempts past their deadline. */
const DEADLINE_TICK_MS = 50;

/**
 * An attempt's deadline, given to undici as its `signal` (undici takes an EventEmitter-like one):
 * the transport's one timer fires it once the attempt is past its time, which aborts the request
 * wherever it is (queued, connecting, waiting for headers, reading the body). Cheaper than
 * `AbortSignal.timeout` per attempt (a signal, a timer and a weak reference each), which cost
 * ~5 % of a delivery's CPU in the webhook bench.
 */
class Deadline {
  aborted = false;
  reason: Error | undefined = undefined;
  private listeners: Array<() => void> = [];
  constructor(readonly at: number) {}
  on(_event: 'abort', listener: () => void): this {
    this.listeners.push(listener);
    return this;
  }
  once(event: 'abort', listener: () => void): this {
    return this.on(event, listener);
  }
  removeListener(_event: 'abort', listener: () => void): this {
    this.listeners = this.listeners.filter((l) => l !== listener);
    return this;
  }
  fire(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = new Error('timeout: no answer in time');
    const listeners = this.listeners;
    this.listeners = [];
    for (const l of listeners) l();
  }
}

export class WebhookTransport {
  private readonly pools = new Map<string, PoolEntry>();
  /** One TLS context for every connection: built from ~150 root certificates (plus WEBHOOK_CA_FILE) once, not per connection. */
  private readonly secureContext: tls.SecureContext;
  private readonly timer: NodeJS.Timeout;
  /** attempts on the wire, each with its deadline */
  private readonly deadlines = new Set<Deadline>();
  private deadlineTimer: NodeJS.Timeout | null = null;

  constructor(private readonly config: Pick<Config, 'webhookCaFile' | 'webhookTimeoutMs'>) {
    const ca = config.webhookCaFile ? [...tls.rootCertificates, fs.readFileSync(config.webhookCaFile, 'utf8')] : undefined;
    this.secureContext = tls.createSecureContext({ ca });
    this.timer = setInterval(() => this.closeIdle(), POOL_IDLE_MS);
    this.timer.unref();
  }

  private poolFor(target: VettedUrl): Pool {
    // A target with its own CA (a development receiver) gets pools of its own, never shared.
    const key = target.ca ? `${target.url.origin}|${target.address}|${createHash('sha256').update(target.ca).digest('hex')}` : `${target.url.origin}|${target.address}`;
    const hit = this.pools.get(key);
    if (hit) {
      hit.lastUsed = Date.now();
      return hit.pool;
    }
    const servername = target.url.hostname.replace(/^\[(.*)\]$/, '$1');
    const secureContext = target.ca ? tls.createSecureContext({ ca: [...tls.rootCertificates, target.ca] }) : this.secureContext;
    const connector = buildConnector({ secureContext, rejectUnauthorized: true, timeout: this.config.webhookTimeoutMs } as buildConnector.BuildOptions);
    const address = target.address;
    const pool = new Pool(target.url.origin, {
      connections: POOL_CONNECTIONS,
      keepAliveTimeout: 30_000,
      headersTimeout: this.config.webhookTimeoutMs,
      bodyTimeout: this.config.webhookTimeoutMs,
      // Dial the vetted address; SNI and the certificate check use the URL's host name
      // (no SNI for an IP literal, as TLS requires).
      connect: (opts, cb) => connector({ ...opts, hostname: address, servername: isIP(servername) ? undefined : servername } as never, cb),
    });
    this.pools.set(key, { pool, lastUsed: Date.now() });
    return pool;
  }

  /** POSTs `body` with `headers`; any answer within the timeout counts, its body is drained and ignored. */
  async post(target: VettedUrl, headers: Record<string, string>, body: string): Promise<PostResult> {
    const started = process.hrtime.bigint();
    const elapsed = () => Number((process.hrtime.bigint() - started) / 1_000_000n);
    const timeoutMs = this.config.webhookTimeoutMs;
    const signal = this.deadline(timeoutMs);
    try {
      const res = await this.poolFor(target).request({
        method: 'POST',
        path: `${target.url.pathname}${target.url.search}`,
        headers,
        body,
        signal: signal as unknown as EventEmitter, // undici's EventEmitter form of a signal
      });
      const latencyMs = elapsed();
      // Only the status matters; read a little of the body so the connection can be kept.
      await res.body.dump({ limit: MAX_BODY_BYTES }).catch(() => undefined);
      // The timer fires up to DEADLINE_TICK_MS late: an answer after the timeout is still a timeout.
      if (latencyMs > timeoutMs) return { status: null, latencyMs, error: 'timeout: no answer in time' };
      return { status: res.statusCode, latencyMs, error: null };
    } catch (err) {
      return { status: null, latencyMs: elapsed(), error: describe(err, signal) };
    } finally {
      this.deadlines.delete(signal);
      if (this.deadlines.size === 0 && this.deadlineTimer) {
        clearInterval(this.deadlineTimer);
        this.deadlineTimer = null;
      }
    }
  }

  /** A deadline `ms` from now, watched by the transport's one timer (running while attempts are on the wire). */
  private deadline(ms: number): Deadline {
    const d = new Deadline(Date.now() + ms);
    this.deadlines.add(d);
    if (!this.deadlineTimer) {
      this.deadlineTimer = setInterval(() => {
        const now = Date.now();
        for (const x of this.deadlines) if (x.at <= now) x.fire();
      }, DEADLINE_TICK_MS);
      this.deadlineTimer.unref();
    }
    return d;
  }

  private closeIdle(): void {
    const cutoff = Date.now() - POOL_IDLE_MS;
    for (const [key, entry] of this.pools) {
      if (entry.lastUsed < cutoff) {
        this.pools.delete(key);
        void entry.pool.close().catch(() => undefined);
      }
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    if (this.deadlineTimer) clearInterval(this.deadlineTimer);
    this.deadlineTimer = null;
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.pool.close().catch(() => undefined)));
  }
}

function describe(err: unknown, signal: Deadline): string {
  if (signal.aborted) return 'timeout: no answer in time';
  const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e.code ?? e.cause?.code;
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return 'timeout: no answer in time';
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'connection reset';
  if (code && /CERT|SSL|TLS|ERR_TLS/.test(code)) return `tls error: ${code}`;
  return `network error: ${code ?? e.message ?? 'unknown'}`;
}
