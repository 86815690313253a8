import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import Joi from 'joi';
import { PLAN_LIMITS, Plan, PlanLimits } from './plans';

/** REDIS_COMMAND_TIMEOUT_MS's default (Config.redisCommandTimeoutMs). */
export const DEFAULT_REDIS_COMMAND_TIMEOUT_MS = 1_000;

/**
 * What a worker process runs (docs/operations.md "Worker roles"): `all` the whole engine; `new`
 * the relay and the fan-out, so new events' first attempts; `due` everything that falls due
 * later (retries, rows left waiting, the sweep, maintenance, mirrors, background jobs).
 */
export type WorkerRole = 'all' | 'new' | 'due';
export const WORKER_ROLES: readonly WorkerRole[] = ['all', 'new', 'due'];
/** Whether a worker of `role` runs the `part` named for a role (`all` runs both). */
export const runsPart = (role: WorkerRole, part: 'new' | 'due'): boolean => role === 'all' || role === part;

export interface Config {
  nodeEnv: 'development' | 'production' | 'test';
  databaseUrl: string;
  redisUrl: string;
  /**
   * Redis Cluster start-up nodes (REDIS_CLUSTER_NODES, `host:port,host:port`); empty = one Redis at
   * redisUrl. On a cluster every key is named with a hash tag (redis-keys.ts).
   */
  redisClusterNodes: ReadonlyArray<{ host: string; port: number }>;
  /**
   * A producer connection's command that gets no answer in this long (ms) fails and Redis counts
   * as away, so a Redis that accepts connections but answers nothing cannot hang a request
   * (REDIS_COMMAND_TIMEOUT_MS, default 1,000, at most 10,000; docs/limits.md "How 'away' is decided").
   */
  redisCommandTimeoutMs: number;
  /**
   * `session` (default): each pooled connection is the application's for its life (direct to
   * PostgreSQL, or PgBouncer in session mode). `transaction`: PgBouncer in transaction mode, so no
   * session state is set or relied on (docs/operations.md "PgBouncer").
   */
  databasePoolMode: 'session' | 'transaction';
  /** a direct connection (not through PgBouncer) for LISTEN and migrations; null: DATABASE_URL is direct, or the relay polls */
  databaseDirectUrl: string | null;
  /** API host port (keys and tokens); default 3000 */
  apiPort: number;
  /** web host port (web sessions); default 3001 */
  webPort: number;
  publicApiUrl: string;
  publicWebUrl: string;
  /** 32 bytes as 64 hex characters; encrypts secrets at rest and signs cursors */
  secretsKey: string;
  /** prefix of every BullMQ and limiter key in Redis; default `teamchat` */
  redisPrefix: string;
  logLevel: string;
  /** per-plan limits; the table in plans.ts unless overridden (tests lower them) */
  planLimits: Readonly<Record<Plan, PlanLimits>>;
  /** whether per-minute limits and call units are enforced; default true; must be true in production */
  limitsEnabled: boolean;
  /** web session lifetime in hours; default 336 (14 days) */
  sessionTtlHours: number;
  /** hosts exempt from the webhook private-address rule (local development and tests only; refused in production) */
  webhookAllowedHosts: readonly string[];
  /** PEM file of an extra CA trusted for receivers' TLS (local development and tests) */
  webhookCaFile: string | null;
  /** where `webhooks:listen` leaves its development receivers' allowances (webhooks/dev-receivers.ts); default `<DEV_DATA_DIR>/webhook-listen`; always null in production */
  webhookDevReceiversDir: string | null;
  /** delays between webhook attempts, in ms; default 1m,5m,30m,2h,6h,12h,24h */
  webhookRetryScheduleMs: readonly number[];
  /** receiver answer time per attempt, in ms; default 10000 */
  webhookTimeoutMs: number;
  /** least time between two messages of one mirror, in ms; default 1000 (Slack's documented rate) */
  mirrorMinIntervalMs: number;
  /** SMTP server for notification emails (e.g. smtp://127.0.0.1:2525); none: notifications are in-app only */
  smtpUrl: string | null;
  /** From address of notification emails */
  smtpFrom: string;
  /** MCP server port; default 3002 */
  mcpPort: number;
  /** where the MCP server reaches the API host; default http://127.0.0.1:$API_PORT */
  mcpApiUrl: string;
  /** an MCP session unused this long is closed, in minutes; default 60 */
  mcpSessionIdleMinutes: number;
  /** operations port of an MCP server process (/healthz, /readyz, /metrics); default 9466; 0 = any free port */
  mcpOpsPort: number;
  /** operations port of the API process (/healthz, /readyz, /metrics); default 9464; 0 = any free port */
  opsPort: number;
  /** operations port of a worker process; default 9465; 0 = any free port (several workers on one machine) */
  workerOpsPort: number;
  /** what a worker process runs (WORKER_ROLE); default all */
  workerRole: WorkerRole;
  /** how long a graceful shutdown may take before the process exits anyway, in ms; default 25000 */
  shutdownTimeoutMs: number;
  /** PostgreSQL statement_timeout and idle_in_transaction_session_timeout of the API and MCP pools, in ms; default 5000 */
  dbStatementTimeoutMs: number;
  /** the same bound for the worker's pool, in ms; default 30000 (batch jobs, no caller waiting) */
  workerDbStatementTimeoutMs: number;
  /** behind one reverse proxy: the client address is the one it appends to X-Forwarded-For; default false (the socket's address) */
  trustProxy: boolean;
  /** development only: where `npm start` keeps the embedded PostgreSQL's and redis-server's data; default `.data` */
  devDataDir: string;
  /** where file bytes are kept: `local` (disk under filesDir) or `s3`; default local */
  filesDriver: 'local' | 's3';
  /** the local driver's directory; default ./.data/files */
  filesDir: string;
  /** S3-compatible endpoint URL (none: AWS's own for the region); path-style addressing when set */
  s3Endpoint: string | null;
  /** the bucket of the s3 driver (required when FILES_DRIVER=s3) */
  s3Bucket: string | null;
  /** default us-east-1 */
  s3Region: string;
}

/** `1m,5m,30m,2h` (also `s` and `d`) to milliseconds; throws on a bad item. */
export function parseDurationList(text: string): number[] {
  const unit: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  return text.split(',').map((item) => {
    const m = /^\s*(\d+)(s|m|h|d)\s*$/.exec(item);
    if (!m || Number(m[1]) <= 0) throw new ConfigError(`Invalid configuration: "${item}" is not a duration like 30s, 5m, 2h or 1d`);
    return Number(m[1]) * unit[m[2]];
  });
}

const schema = Joi.object({
  NODE_ENV: Joi.string().valid('development', 'production', 'test').default('development'),
  DATABASE_URL: Joi.string().uri({ scheme: ['postgres', 'postgresql'] }).default('postgres://postgres@127.0.0.1:5432/teamchat'),
  REDIS_URL: Joi.string().uri({ scheme: ['redis', 'rediss'] }).default('redis://127.0.0.1:6379'),
  REDIS_COMMAND_TIMEOUT_MS: Joi.number().integer().min(100).max(10_000).default(DEFAULT_REDIS_COMMAND_TIMEOUT_MS),
  REDIS_CLUSTER_NODES: Joi.string().pattern(/^\s*[A-Za-z0-9.-]+:\d{1,5}\s*(,\s*[A-Za-z0-9.-]+:\d{1,5}\s*)*$/).allow('').default(''),
  DATABASE_POOL_MODE: Joi.string().valid('session', 'transaction').default('session'),
  DATABASE_DIRECT_URL: Joi.string().uri({ scheme: ['postgres', 'postgresql'] }).allow(''),
  API_PORT: Joi.number().port().default(3000),
  WEB_PORT: Joi.number().port().default(3001),
  PUBLIC_API_URL: Joi.string().uri({ scheme: ['http', 'https'] }),
  PUBLIC_WEB_URL: Joi.string().uri({ scheme: ['http', 'https'] }),
  SECRETS_KEY: Joi.string().hex().length(64),
  REDIS_PREFIX: Joi.string().pattern(/^[A-Za-z0-9_.-]+$/).default('teamchat'),
  LOG_LEVEL: Joi.string().valid('error', 'warn', 'info', 'debug', 'silent').default('info'),
  LIMITS_ENABLED: Joi.boolean().default(true),
  SESSION_TTL_HOURS: Joi.number().integer().min(1).max(24 * 90).default(336),
  WEBHOOK_ALLOWED_HOSTS: Joi.string().allow('').default(''),
  WEBHOOK_CA_FILE: Joi.string().allow(''),
  WEBHOOK_DEV_RECEIVERS_DIR: Joi.string().allow(''),
  WEBHOOK_RETRY_SCHEDULE: Joi.string().default('1m,5m,30m,2h,6h,12h,24h'),
  WEBHOOK_TIMEOUT_MS: Joi.number().integer().min(100).max(60_000).default(10_000),
  MIRROR_MIN_INTERVAL_MS: Joi.number().integer().min(0).max(60_000).default(1000),
  SMTP_URL: Joi.string().uri({ scheme: ['smtp', 'smtps'] }).allow(''),
  SMTP_FROM: Joi.string().default('teamchat <no-reply@teamchat.invalid>'),
  MCP_PORT: Joi.number().port().default(3002),
  MCP_API_URL: Joi.string().uri({ scheme: ['http', 'https'] }),
  MCP_SESSION_IDLE_MINUTES: Joi.number().integer().min(1).max(24 * 60).default(60),
  MCP_OPS_PORT: Joi.number().port().default(9466),
  OPS_PORT: Joi.number().port().default(9464),
  WORKER_OPS_PORT: Joi.number().port().default(9465),
  WORKER_ROLE: Joi.string().valid(...WORKER_ROLES).default('all'),
  SHUTDOWN_TIMEOUT_MS: Joi.number().integer().min(1000).max(600_000).default(25_000),
  DB_STATEMENT_TIMEOUT_MS: Joi.number().integer().min(100).max(600_000).default(5_000),
  WORKER_DB_STATEMENT_TIMEOUT_MS: Joi.number().integer().min(100).max(3_600_000).default(30_000),
  TRUST_PROXY: Joi.boolean().default(false),
  DEV_DATA_DIR: Joi.string().default('.data'),
  FILES_DRIVER: Joi.string().valid('local', 's3').default('local'),
  FILES_DIR: Joi.string().default('./.data/files'),
  S3_ENDPOINT: Joi.string().uri({ scheme: ['http', 'https'] }).allow(''),
  S3_BUCKET: Joi.string().pattern(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/).when('FILES_DRIVER', { is: 's3', then: Joi.required() }),
  S3_REGION: Joi.string().pattern(/^[a-z0-9-]{1,32}$/).default('us-east-1'),
}).unknown(true);

/**
 * Where a process may LISTEN (the relay's wake-up): DATABASE_DIRECT_URL, else DATABASE_URL unless
 * it is PgBouncer in transaction mode (a LISTEN there is lost with the server connection it ran
 * on); null: no LISTEN, the relay polls (docs/operations.md "PgBouncer").
 */
export function listenDatabaseUrl(config: Pick<Config, 'databaseUrl' | 'databaseDirectUrl' | 'databasePoolMode'>): string | null {
  if (config.databaseDirectUrl) return config.databaseDirectUrl;
  return config.databasePoolMode === 'transaction' ? null : config.databaseUrl;
}

/** `host:port,host:port` (validated by the schema) to start-up nodes. */
function parseClusterNodes(text: string): Array<{ host: string; port: number }> {
  return text.split(',').map((n) => n.trim()).filter(Boolean).map((n) => {
    const colon = n.lastIndexOf(':');
    return { host: n.slice(0, colon), port: Number(n.slice(colon + 1)) };
  });
}

/** Where a development SECRETS_KEY is kept between restarts when none is given. */
const DEV_KEY_FILE = path.resolve(process.cwd(), '.dev-secrets-key');

function devSecretsKey(warn: (msg: string) => void): string {
  if (fs.existsSync(DEV_KEY_FILE)) return fs.readFileSync(DEV_KEY_FILE, 'utf8').trim();
  const key = randomBytes(32).toString('hex');
  fs.writeFileSync(DEV_KEY_FILE, key, { mode: 0o600 });
  warn(`SECRETS_KEY is not set: generated a development key in ${DEV_KEY_FILE}. Set SECRETS_KEY in production.`);
  return key;
}

export class ConfigError extends Error {}

/** Set by `npm start` in its children's environment: the parent has already said the configuration's warnings. */
export const WARNED_MARKER = 'TEAMCHAT_CONFIG_WARNED';

/** Validates the environment once at boot; a bad value throws ConfigError naming it. */
export function loadConfig(
  env: NodeJS.ProcessEnv,
  overrides: Partial<Config> = {},
  warn: (msg: string) => void = (m) => process.stderr.write(`warning: ${m}\n`),
): Readonly<Config> {
  // `npm start` validates the configuration once, says its warnings, and marks its children's
  // environment so that each warning is said once, not once per process (api, mcp, worker).
  if (env[WARNED_MARKER] === '1') warn = () => undefined;
  const { value, error } = schema.validate(env, { abortEarly: false, convert: true });
  if (error) throw new ConfigError(`Invalid configuration: ${error.details.map((d) => d.message).join('; ')}`);
  if (value.NODE_ENV === 'production' && !value.SECRETS_KEY && !overrides.secretsKey) {
    throw new ConfigError('Invalid configuration: SECRETS_KEY is required in production (64 hex characters).');
  }
  const webhookAllowedHosts = String(value.WEBHOOK_ALLOWED_HOSTS).split(',').map((h: string) => h.trim().toLowerCase()).filter(Boolean);
  if (value.NODE_ENV === 'production' && webhookAllowedHosts.length > 0) {
    throw new ConfigError('Invalid configuration: WEBHOOK_ALLOWED_HOSTS is for local development and tests; it is refused when NODE_ENV=production.');
  }
  // Development receivers exempt a loopback endpoint registered by `webhooks:listen` from the URL
  // guard's address rule: a production process never reads them, and refuses to be told to.
  if (value.NODE_ENV === 'production' && value.WEBHOOK_DEV_RECEIVERS_DIR) {
    throw new ConfigError('Invalid configuration: WEBHOOK_DEV_RECEIVERS_DIR is for local development (webhooks:listen); it is refused when NODE_ENV=production.');
  }
  const devDataDir = path.resolve(process.cwd(), value.DEV_DATA_DIR);
  const webhookDevReceiversDir = value.NODE_ENV === 'production' ? null : path.resolve(process.cwd(), value.WEBHOOK_DEV_RECEIVERS_DIR || path.join(devDataDir, 'webhook-listen'));
  if (webhookAllowedHosts.length > 0) warn(`WEBHOOK_ALLOWED_HOSTS exempts ${webhookAllowedHosts.join(', ')} from the webhook private-address rule (development and tests only).`);
  const config: Config = {
    nodeEnv: value.NODE_ENV,
    databaseUrl: value.DATABASE_URL,
    redisUrl: value.REDIS_URL,
    redisClusterNodes: parseClusterNodes(value.REDIS_CLUSTER_NODES),
    redisCommandTimeoutMs: value.REDIS_COMMAND_TIMEOUT_MS,
    databasePoolMode: value.DATABASE_POOL_MODE,
    databaseDirectUrl: value.DATABASE_DIRECT_URL || null,
    apiPort: value.API_PORT,
    webPort: value.WEB_PORT,
    publicApiUrl: (value.PUBLIC_API_URL ?? `http://localhost:${value.API_PORT}`).replace(/\/$/, ''),
    publicWebUrl: (value.PUBLIC_WEB_URL ?? `http://localhost:${value.WEB_PORT}`).replace(/\/$/, ''),
    secretsKey: value.SECRETS_KEY ?? overrides.secretsKey ?? devSecretsKey(warn),
    redisPrefix: value.REDIS_PREFIX,
    logLevel: value.LOG_LEVEL,
    planLimits: PLAN_LIMITS,
    limitsEnabled: value.LIMITS_ENABLED,
    sessionTtlHours: value.SESSION_TTL_HOURS,
    webhookAllowedHosts,
    webhookCaFile: value.WEBHOOK_CA_FILE || null,
    webhookDevReceiversDir,
    webhookRetryScheduleMs: parseDurationList(value.WEBHOOK_RETRY_SCHEDULE),
    webhookTimeoutMs: value.WEBHOOK_TIMEOUT_MS,
    mirrorMinIntervalMs: value.MIRROR_MIN_INTERVAL_MS,
    smtpUrl: value.SMTP_URL || null,
    smtpFrom: value.SMTP_FROM,
    mcpPort: value.MCP_PORT,
    mcpApiUrl: (value.MCP_API_URL ?? `http://127.0.0.1:${value.API_PORT}`).replace(/\/$/, ''),
    mcpSessionIdleMinutes: value.MCP_SESSION_IDLE_MINUTES,
    mcpOpsPort: value.MCP_OPS_PORT,
    opsPort: value.OPS_PORT,
    workerOpsPort: value.WORKER_OPS_PORT,
    workerRole: value.WORKER_ROLE,
    shutdownTimeoutMs: value.SHUTDOWN_TIMEOUT_MS,
    dbStatementTimeoutMs: value.DB_STATEMENT_TIMEOUT_MS,
    workerDbStatementTimeoutMs: value.WORKER_DB_STATEMENT_TIMEOUT_MS,
    trustProxy: value.TRUST_PROXY,
    devDataDir,
    filesDriver: value.FILES_DRIVER,
    filesDir: path.resolve(value.FILES_DIR),
    s3Endpoint: value.S3_ENDPOINT || null,
    s3Bucket: value.S3_BUCKET ?? null,
    s3Region: value.S3_REGION,
    ...overrides,
  };
  // Limits protect every tenant from every other; turning them off is for benchmarks only.
  if (config.nodeEnv === 'production' && config.webhookDevReceiversDir) {
    throw new ConfigError('Invalid configuration: development receivers (webhooks:listen) are refused when NODE_ENV=production.');
  }
  if (config.nodeEnv === 'production' && !config.limitsEnabled) {
    throw new ConfigError('Invalid configuration: LIMITS_ENABLED=false is not allowed when NODE_ENV=production.');
  }
  return Object.freeze(config);
}
