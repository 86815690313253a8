import request from 'supertest';
import type { Express } from 'express';
import { createApp } from '@teamchat/api/src/app';
import {
  openAccount, preparePerson, createAgent, createApiKey, createDeps, getMemberByEmail, loadConfig, randomToken, waitReady,
  addMember, ensureUser, PLAN_LIMITS, type Config, type Deps, type Plan, type PlanLimits, type Role,
} from '@teamchat/core';
import { testDatabaseUrl, TEST_REDIS_URL } from './env';

export interface Harness {
  deps: Deps & { close(): Promise<void> };
  api: Express;
  web: Express;
  /** the clock every part of this harness reads; tests move it with `set`/`advance` and go back to real time with `reset` */
  clock: { now: Date; set(d: Date): void; advance(ms: number): void; reset(): void };
  close(): Promise<void>;
}

/** The plan table with per-minute calls and daily units raised to 1,000,000 (other limits as in plans.ts). */
const high = (p: Plan): PlanLimits => ({ ...PLAN_LIMITS[p], callsPerMinute: 1_000_000, unitsPerDay: 1_000_000 });
export const UNLIMITED_PLANS: Readonly<Record<Plan, PlanLimits>> = Object.freeze({ starter: high('starter'), pro: high('pro'), scale: high('scale') });

/**
 * Real apps on the real services: one deps set (pool, Redis), both hosts' apps, an injectable
 * clock, and a Redis prefix unique to this harness so BullMQ queues and counters never collide.
 */
export async function startHarness(overrides: Partial<Config> = {}, options: { poolSize?: number } = {}): Promise<Harness> {
  const clock = {
    now: new Date(),
    frozen: false,
    set(d: Date) { this.now = d; this.frozen = true; },
    advance(ms: number) { this.now = new Date(this.current().getTime() + ms); this.frozen = true; },
    reset() { this.frozen = false; },
    current(): Date { return this.frozen ? this.now : new Date(); },
  };
  const config = loadConfig(
    {
      NODE_ENV: 'test', DATABASE_URL: testDatabaseUrl(), REDIS_URL: TEST_REDIS_URL, LOG_LEVEL: 'silent',
      // Set by a test file that runs its tests on a Redis Cluster (test/cluster); empty: one Redis.
      REDIS_CLUSTER_NODES: process.env.TEST_REDIS_CLUSTER_NODES ?? '',
      // A producer's Redis command gives up after 5 s here, not 1 s: on a loaded 2-core host the
      // test process (or Redis) can stall past a second, and a command that timed out there fails
      // tests that are not about Redis. A file that freezes Redis sets the default back.
      REDIS_COMMAND_TIMEOUT_MS: '5000',
      // A file that includes another file's tests may raise their harness's statement bound (test/cluster).
      ...(process.env.TEST_HARNESS_DB_BOUND_MS ? { DB_STATEMENT_TIMEOUT_MS: process.env.TEST_HARNESS_DB_BOUND_MS } : {}),
    },
    {
      secretsKey: 'ab'.repeat(32),
      redisPrefix: `test-${randomToken(8)}`,
      publicApiUrl: 'http://api.test',
      publicWebUrl: 'http://web.test',
      // Limits run on every account route but never bite unless a test lowers them.
      planLimits: UNLIMITED_PLANS,
      ...overrides,
    },
  );
  const deps = createDeps(config, 'test', { now: () => clock.current(), poolSize: options.poolSize ?? 20 });
  await waitReady(deps.redis);
  const api = createApp(deps, 'api');
  const web = createApp(deps, 'web');
  return {
    deps, api, web,
    clock: { get now() { return clock.current(); }, set: (d) => clock.set(d), advance: (ms) => clock.advance(ms), reset: () => clock.reset() },
    close: () => deps.close(),
  };
}

export const PASSWORD = 'correct horse battery';

export interface TestAccount {
  accountId: string;
  owner: { userId: string; identityId: string; email: string };
}

let counter = 0;
export function uniqueEmail(tag = 'user'): string {
  counter += 1;
  return `${tag}-${randomToken(8)}-${counter}@example.test`;
}

/** A fresh account (tenant) for one test. */
export async function newAccount(h: Harness, plan: Plan = 'pro'): Promise<TestAccount> {
  const email = uniqueEmail('owner');
  const out = await openAccount(h.deps.database.db, { plan, ownerEmail: email, ownerPassword: PASSWORD });
  return { accountId: out.account_id, owner: { userId: out.owner.user_id, identityId: out.owner.identity_id, email } };
}

export async function addPerson(h: Harness, accountId: string, role: Role, email = uniqueEmail(role)) {
  const person = await preparePerson(h.deps.database.db, email, PASSWORD);
  return h.deps.database.db.transaction(async (tx) => {
    const user = await ensureUser(tx, person);
    return addMember(tx, { accountId, userId: user.id, email, role });
  });
}

/** An API key for the person with `email`, with the given scopes. */
export async function newKey(
  h: Harness,
  accountId: string,
  email: string,
  scopes: string[],
  opts: { readOnly?: boolean; expiresAt?: Date } = {},
): Promise<string> {
  const member = await getMemberByEmail(h.deps.database.db, accountId, email);
  if (!member) throw new Error(`no member ${email}`);
  const out = await h.deps.database.db.transaction((tx) =>
    createApiKey(tx, {
      accountId, userId: member.userId, identityId: member.identityId, role: member.role as Role,
      scopes, readOnly: opts.readOnly ?? false, expiresAt: opts.expiresAt,
    }),
  );
  return out.key;
}

export async function newAgent(h: Harness, accountId: string, approverEmail: string, scopes: string[]) {
  const member = await getMemberByEmail(h.deps.database.db, accountId, approverEmail);
  if (!member) throw new Error(`no member ${approverEmail}`);
  return h.deps.database.db.transaction((tx) =>
    createAgent(tx, { accountId, name: `agent-${randomToken(4)}`, approvedByUserId: member.userId, approverRole: member.role as Role, scopes }),
  );
}

/** Signs in on the web host; returns an agent that carries the cookie, and the CSRF token. */
export async function signInWeb(h: Harness, email: string, password = PASSWORD) {
  const agent = request.agent(h.web);
  const res = await agent.post('/auth/sign-in').send({ email, password });
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { agent, csrf: res.body.csrf_token as string, body: res.body, cookie: res.headers['set-cookie'] as unknown as string[] };
}

export const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });
