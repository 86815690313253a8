import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  AppError, deleteEndpoint, findUserByEmail, loadConfig, registerEndpoint, removeDevReceiver, resolveActor, writeDevReceiver, type Actor, type Config,
} from '@teamchat/core';
import { and, asc, eq, members, type Db } from '@teamchat/db';
import { verifyDeliveryDetailed, WebhookVerificationError } from '@teamchat/client';

/**
 * `webhooks:listen`: webhooks on a developer's machine in one command (README "Operator CLI",
 * docs/webhooks.md "Local development"). A local HTTPS receiver with a throwaway CA, an endpoint
 * registered for it as the account's owner would from the dashboard (enabled, secret known
 * here), each delivery printed (and verified with the receiver kit) as it arrives, optionally
 * forwarded to a plain-HTTP local URL, and the endpoint removed on Ctrl-C or SIGTERM.
 *
 * The loopback URL and the throwaway CA are allowed for this one endpoint through a development
 * receiver file (packages/core/src/webhooks/dev-receivers.ts), which the API and workers read at
 * send time: no restart, and never in production (refused here and by every process's config).
 */
export interface ListenOptions {
  account: string;
  events: string[];
  'forward-to'?: string;
  payload: 'pointers' | 'text';
  as?: string;
}

export interface ListenIo {
  json: boolean;
  out(line: string): void;
  err(line: string): void;
}

/** A CA and a leaf for 127.0.0.1, made by openssl in a private temporary directory (2 days). */
function throwawayCertificates(): { dir: string; ca: string; key: string; cert: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'teamchat-listen-'));
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  try {
    run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=teamchat webhooks:listen CA',
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
    run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', '/CN=127.0.0.1');
    fs.writeFileSync(path.join(dir, 'leaf.ext'), 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
    run('x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'leaf.pem', '-days', '2', '-extfile', 'leaf.ext');
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw new Error(`could not make a throwaway CA with openssl (is it installed?): ${(err as Error).message}`, { cause: err });
  }
  const read = (f: string) => fs.readFileSync(path.join(dir, f), 'utf8');
  return { dir, ca: read('ca.pem'), key: read('leaf.key'), cert: read('leaf.pem') };
}

/** The owner (or admin) the endpoint is registered as: `--as`, else the account's first owner. */
async function actingOwner(db: Db, accountId: string, email: string | undefined): Promise<Actor> {
  let userId: string | undefined;
  if (email) {
    userId = (await findUserByEmail(db, email))?.id;
    if (!userId) throw new AppError('not_found', `${email} is not a member of ${accountId}.`);
  } else {
    const [owner] = await db.select({ userId: members.userId }).from(members)
      .where(and(eq(members.accountId, accountId), eq(members.role, 'owner'))).orderBy(asc(members.seq)).limit(1);
    userId = owner?.userId;
    if (!userId) throw new AppError('not_found', `account ${accountId} not found (or it has no owner).`);
  }
  // A web session's principal: what the dashboard registers with (enabled at once, the secret returned).
  const { actor } = await resolveActor(db, { via: 'web_session', id: 'cli_webhooks_listen', userId, readOnly: false }, accountId);
  if (actor.role === 'member') throw new AppError('forbidden', `${email} is a member; registering endpoints takes an owner or admin.`);
  return actor;
}

const HOP_BY_HOP = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive']);

async function forward(to: string, headers: IncomingHttpHeaders, body: Buffer): Promise<number | string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) out[k] = Array.isArray(v) ? v.join(', ') : v;
  try {
    const res = await fetch(to, { method: 'POST', headers: out, body, signal: AbortSignal.timeout(10_000), redirect: 'manual' });
    await res.arrayBuffer().catch(() => undefined);
    return res.status;
  } catch (err) {
    return `forward failed: ${(err as Error).message}`;
  }
}

export async function webhooksListen(db: Db, o: ListenOptions, io: ListenIo): Promise<void> {
  const config: Readonly<Config> = loadConfig(process.env, {}, (m) => io.err(`warning: ${m}`));
  if (config.nodeEnv === 'production' || !config.webhookDevReceiversDir) {
    throw new AppError('forbidden', 'webhooks:listen is for local development: it is refused when NODE_ENV=production.');
  }
  const actor = await actingOwner(db, o.account, o.as);
  const certs = throwawayCertificates();
  const sockets = new Set<Socket>();
  const token = randomBytes(16).toString('hex');
  const hookPath = `/listen/${token}`;
  let secret = '';

  const server = https.createServer({ key: certs.key, cert: certs.cert }, (req, res) => {
    const arrived = Date.now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== hookPath) {
        res.writeHead(404).end();
        return;
      }
      void (async () => {
        const raw = Buffer.concat(chunks);
        let verified = false;
        let reason: string | null = null;
        let scheme: string | null = null;
        try {
          scheme = verifyDeliveryDetailed({ rawBody: raw, headers: req.headers, secrets: [secret] }).scheme;
          verified = true;
        } catch (err) {
          if (!(err instanceof WebhookVerificationError)) throw err;
          reason = err.reason;
        }
        let body: { id?: string; type?: string; created_at?: string } = {};
        try {
          body = JSON.parse(raw.toString('utf8'));
        } catch {
          // printed as unknown
        }
        const createdAt = body.created_at ? Date.parse(body.created_at) : NaN;
        const latencyMs = Number.isFinite(createdAt) ? arrived - createdAt : null;
        let status: number;
        let forwarded: number | string | null = null;
        if (o['forward-to']) {
          forwarded = await forward(o['forward-to'], req.headers, raw);
          status = typeof forwarded === 'number' ? forwarded : 502;
        } else {
          status = verified ? 200 : 400;
        }
        res.writeHead(status, { 'content-type': 'text/plain' }).end(verified ? 'ok' : `not verified: ${reason}`);
        const line = {
          at: new Date(arrived).toISOString(),
          event_type: body.type ?? req.headers['x-service-event'] ?? null,
          event_id: body.id ?? req.headers['webhook-id'] ?? null,
          delivery_id: req.headers['x-service-delivery'] ?? null,
          attempt: Number(req.headers['x-service-attempt']) || null,
          verified,
          scheme,
          reason,
          latency_ms: latencyMs,
          status,
          forwarded_status: forwarded,
        };
        if (io.json) io.out(JSON.stringify(line));
        else {
          const check = verified ? 'verified' : `NOT VERIFIED (${reason})`;
          const fwd = forwarded === null ? '' : `  → ${o['forward-to']} ${forwarded}`;
          io.out(`${line.at}  ${line.event_type}  ${line.event_id}  ${check}  ${latencyMs ?? '?'} ms  answered ${status}${fwd}`);
        }
      })().catch((err: Error) => {
        io.err(`error: ${err.message}`);
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const url = `https://127.0.0.1:${(server.address() as { port: number }).port}${hookPath}`;

  let endpointId: string | null = null;
  const closeServer = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
    fs.rmSync(certs.dir, { recursive: true, force: true });
  };
  try {
    const deps = { config: { ...config, webhookAllowedHosts: [...config.webhookAllowedHosts, '127.0.0.1'] }, now: () => new Date() };
    await db.transaction(async (tx) => {
      const out = await registerEndpoint(tx, { deps, actor, url, events: o.events, channels: 'all', payload: o.payload });
      secret = out.secret!;
      endpointId = out.endpoint.id;
      // Written before the commit: no attempt can see the endpoint without its allowance.
      writeDevReceiver(config, { endpoint_id: out.endpoint.id, account_id: o.account, url, ca: certs.ca });
    });
  } catch (err) {
    if (endpointId) removeDevReceiver(config, endpointId);
    await closeServer();
    throw err;
  }

  io.err(`listening on ${url}`);
  io.err(`endpoint ${endpointId} of ${o.account} (as ${actor.userId}), events: ${o.events.join(', ')}${o['forward-to'] ? `, forwarding to ${o['forward-to']}` : ''}`);
  io.err(`signing secret: ${secret}`);
  io.err('Ctrl-C removes the endpoint.');

  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });

  await closeServer();
  try {
    await db.transaction((tx) => deleteEndpoint(tx, { deps: { config, now: () => new Date() }, actor, endpointId: endpointId! }));
    io.err(`removed endpoint ${endpointId}`);
  } catch (err) {
    io.err(`endpoint ${endpointId} was not removed: ${(err as Error).message}`);
  } finally {
    removeDevReceiver(config, endpointId!);
  }
}
