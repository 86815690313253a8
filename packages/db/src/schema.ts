/**
 * The whole relational schema. Ids are text with a type prefix (acct_, usr_, ...), made by
 * `@teamchat/core` ids. Every tenant table carries account_id so a query can always be fenced
 * to one account. Timestamps are timestamptz; ordering columns that cursors page over are
 * either a bigserial `seq` or a strictly increasing bigint.
 */
import { sql } from 'drizzle-orm';
import {
  bigint,
  customType,
  foreignKey,
  bigserial,
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';

const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** A PostgreSQL tsvector (full-text search document); only ever read by SQL, never mapped to JS. */
const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' });

export const accounts = pgTable('accounts', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  plan: text('plan').notNull(), // starter | pro | scale
  state: text('state').notNull().default('active'), // active | read_only | suspended
  createdAt: tstz('created_at').notNull().defaultNow(),
});

/** A person who can sign in. People are global; membership in an account is `members`. */
export const users = pgTable('users', {
  id: text('id').primaryKey(),
  email: text('email').notNull(),
  passwordHash: text('password_hash').notNull(),
  createdAt: tstz('created_at').notNull().defaultNow(),
}, (t) => [uniqueIndex('users_email_uq').on(sql`lower(${t.email})`)]);

/** People's and agents' identities inside one account. A person has exactly one per account. */
export const identities = pgTable('identities', {
  id: text('id').primaryKey(),
  seq: bigserial('seq', { mode: 'number' }).notNull(),
  accountId: text('account_id').notNull().references(() => accounts.id),
  kind: text('kind').notNull(), // person | agent
  name: text('name').notNull(),
  userId: text('user_id').references(() => users.id), // the person, for kind=person
  approvedByUserId: text('approved_by_user_id').references(() => users.id), // the seat, for kind=agent
  createdAt: tstz('created_at').notNull().defaultNow(),
}, (t) => [
  index('identities_account_seq_idx').on(t.accountId, t.seq),
  uniqueIndex('identities_person_uq').on(t.accountId, t.userId).where(sql`kind = 'person'`),
]);

/** A person's seat in an account, with its role. */
export const members = pgTable('members', {
  accountId: text('account_id').notNull().references(() => accounts.id),
  userId: text('user_id').notNull().references(() => users.id),
  identityId: text('identity_id').notNull().references(() => identities.id),
  role: text('role').notNull(), // owner | admin | member
  seq: bigserial('seq', { mode: 'number' }).notNull(),
  createdAt: tstz('created_at').notNull().defaultNow(),
}, (t) => [primaryKey({ columns: [t.accountId, t.userId] }), index('members_account_seq_idx').on(t.accountId, t.seq)]);

/** API keys and agent tokens. Only a SHA-256 hash of the secret is kept. */
export const credentials = pgTable('credentials', {
  id: text('id').primaryKey(),
  seq: bigserial('seq', { mode: 'number' }).notNull(),
  accountId: text('account_id').notNull().references(() => accounts.id),
  kind: text('kind').notNull(), // api_key | agent_token
  userId: text('user_id').notNull().references(() => users.id), // the seat the credential spends
  identityId: text('identity_id').notNull().references(() => identities.id), // who it acts as
  prefix: text('prefix').notNull(), // first characters, shown in lists
  secretHash: text('secret_hash').notNull(),
  scopes: text('scopes').array().notNull(),
  readOnly: boolean('read_only').notNull().default(false),
  expiresAt: tstz('expires_at'),
  revokedAt: tstz('revoked_at'),
  lastUsedAt: tstz('last_used_at'),
  createdAt: tstz('created_at').notNull().defaultNow(),
}, (t) => [
  uniqueIndex('credentials_secret_hash_uq').on(t.secretHash),
  index('credentials_account_seq_idx').on(t.accountId, t.seq),
]);

/** Web app sessions (web host only). Token and CSRF token are kept as hashes. */
export const webSessions = pgTable('web_sessions', {
  id: text('id').primaryKey(),
  userId: text('user_id').notNull().references(() => users.id),
  tokenHash: text('token_hash').notNull(),
  csrfHash: text('csrf_hash').notNull(),
  createdAt: tstz('created_at').notNull().defaultNow(),
  expiresAt: tstz('expires_at').notNull(),
  endedAt: tstz('ended_at'),
}, (t) => [uniqueIndex('web_sessions_token_hash_uq').on(t.tokenHash)]);

/**
 * Idempotency records. The row is inserted in the same transaction as the object it creates,
 * so a concurrent request with the same key waits on the unique index and then replays.
 */
export const idempotencyKeys = pgTable('idempotency_keys', {
  userId: text('user_id').notNull(),
  route: text('route').notNull(),
  key: text('key').notNull(),
  requestHash: text('request_hash').notNull(),
  statusCode: integer('status_code'),
  responseBody: jsonb('response_body'),
  responseHeaders: jsonb('response_headers'),
  createdAt: tstz('created_at').notNull().defaultNow(),
}, (t) => [primaryKey({ columns: [t.userId, t.route, t.key] }), index('idempotency_created_idx').on(t.createdAt)]);

export const jobs = pgTable('jobs', {
  id: text('id').primaryKey(),
  accountId: text('account_id').notNull().references(() => accounts.id),
  type: text('type').notNull(),
  status: text('status').notNull().default('queued'), // queued | running | succeeded | failed
  payload: jsonb('payload').notNull(),
  result: jsonb('result'),
  error: jsonb('error'),
  createdByUserId: text('created_by_user_id'),
  createdAt: tstz('created_at').notNull().defaultNow(),
  startedAt: tstz('started_at'),
  finishedAt: tstz('finished_at'),
}, (t) => [index('jobs_status_created_idx').on(t.status, t.createdAt)]);

export const auditRecords = pgTable('audit_records', {
  id: text('id').primaryKey(),
  seq: bigserial('seq', { mode: 'number' }).notNull(),
  accountId: text('account_id').notNull().references(() => accounts.id),
  action: text('action').notNull(),
  actorUserId: text('actor_user_id'),
  actorIdentityId: text('actor_identity_id'),
  actorCredentialId: text('actor_credential_id'),
  via: text('via').notNull(), // api_key | agent_token | web_session | cli | system
  targetType: text('target_type'),
  targetId: text('target_id'),
  data: jsonb('data').notNull().default({}),
  requestId: text('request_id'),
  createdAt: tstz('created_at').notNull().defaultNow(),
}, (t) => [index('audit_account_seq_idx').on(t.accountId, t.seq)]);

/** The outbox: one row per event, written in the transaction of the change that raised it. */
export const events = pgTable('events', {
  id: text('id').primaryKey(),
  seq: bigserial('seq', { mode: 'number' }).notNull(),
  accountId: text('account_id').notNull().references(() => accounts.id),
  type: text('type').notNull(),
  channelId: text('channel_id'),
  data: jsonb('data').notNull(),
  createdAt: tstz('created_at').notNull().defaultNow(),
  relayedAt: tstz('relayed_at'),
}, (t) => [
  index('events_account_seq_idx').on(t.accountId, t.seq),
  index('events_unrelayed_idx').on(t.seq).where(sql`relayed_at IS NULL`),
]);

export const channels = pgTable('channels', {
  id: text('id').primaryKey(),
  seq: bigserial('seq', { mode: 'number' }).notNull(),
  accountId: text('account_id').notNull().references(() => accounts.id),
  kind: text('kind').notNull(), // channel | dm
  name: text('name'),
  topic: text('topic').notNull().default(''),
  dmKey: text('dm_key'), // sorted member identity ids, for kind=dm
  clientRef: text('client_ref'),
  version: integer('version').notNull().default(1),
  createdByIdentityId: text('created_by_identity_id').notNull(),
  lastTsMicros: bigint('last_ts_micros', { mode: 'bigint' }).notNull().default(sql`0`),
  createdAt: tstz('created_at').notNull().defaultNow(),
  updatedAt: tstz('updated_at').notNull().defaultNow(),
}, (t) => [
  index('channels_account_seq_idx').on(t.accountId, t.seq),
  uniqueIndex('channels_name_uq').on(t.accountId, sql`lower(${t.name})`).where(sql`kind = 'channel'`),
  uniqueIndex('channels_dm_key_uq').on(t.accountId, t.dmKey).where(sql`kind = 'dm'`),
]);

export const channelMembers = pgTable('channel_members', {
  channelId: text('channel_id').notNull().references(() => channels.id),
  identityId: text('identity_id').notNull().references(() => identities.id),
  accountId: text('account_id').notNull(),
  seq: bigserial('seq', { mode: 'number' }).notNull(),
  addedAt: tstz('added_at').notNull().defaultNow(),
}, (t) => [
  primaryKey({ columns: [t.channelId, t.identityId] }),
  index('channel_members_identity_idx').on(t.identityId),
]);

export const messages = pgTable('messages', {
  channelId: text('channel_id').notNull().references(() => channels.id),
  tsMicros: bigint('ts_micros', { mode: 'bigint' }).notNull(),
  accountId: text('account_id').notNull(),
  authorIdentityId: text('author_identity_id').notNull(),
  text: text('text').notNull().default(''),
  attachments: jsonb('attachments').notNull().default([]),
  links: jsonb('links').notNull().default([]),
  threadTsMicros: bigint('thread_ts_micros', { mode: 'bigint' }),
  replyCount: integer('reply_count').notNull().default(0),
  mentions: text('mentions').array().notNull().default(sql`'{}'::text[]`),
  broadcast: boolean('broadcast').notNull().default(false),
  version: integer('version').notNull().default(1),
  clientRef: text('client_ref'),
  session: jsonb('session'),
  createdAt: tstz('created_at').notNull().defaultNow(),
  editedAt: tstz('edited_at'),
  /**
   * The text's full-text document (docs/api.md "Search"), `to_tsvector('simple', text)`: kept by
   * the trigger `messages_search_vector` on insert and on a change of `text`, filled for older rows
   * by the online backfill (src/online.ts; docs/operations.md "Migrations"). A plain column, not a
   * generated one: adding a stored generated column rewrites the table under an exclusive lock.
   * Config `simple`: lower-cased words with no stemming and no stop words, so text in any language
   * is indexed as written instead of being mangled by English stemming.
   */
  searchVector: tsvector('search_vector'),
}, (t) => [
  primaryKey({ columns: [t.channelId, t.tsMicros] }),
  index('messages_thread_idx').on(t.channelId, t.threadTsMicros, t.tsMicros),
  // search: an account's messages newest first (the candidates of a common word, sort=newest)
  // These three are built CONCURRENTLY by the online steps, not by migration 0004 (src/online.ts).
  index('messages_account_ts_idx').on(t.accountId, t.tsMicros, t.channelId),
  index('messages_search_idx').using('gin', t.searchVector),
  // identifiers, URLs, e-mail addresses and parts of words: substring match through trigrams (pg_trgm)
  index('messages_text_trgm_idx').using('gin', t.text.op('gin_trgm_ops')),
]);

/**
 * Uploaded files. `state`: pending (reserved, bytes not yet confirmed) | ready (completed).
 * `storage_key` names the bytes in the storage driver (local disk or S3); it is never shown.
 * `uploaded_by` is the uploader's identity. Files are never deleted with a message.
 */
export const files = pgTable('files', {
  id: text('id').primaryKey(), // file_
  seq: bigserial('seq', { mode: 'number' }).notNull(),
  accountId: text('account_id').notNull().references(() => accounts.id),
  uploadedByIdentityId: text('uploaded_by_identity_id').notNull().references(() => identities.id),
  name: text('name').notNull(),
  size: bigint('size', { mode: 'number' }).notNull(),
  contentType: text('content_type').notNull(),
  state: text('state').notNull().default('pending'),
  storageKey: text('storage_key').notNull(),
  sha256: text('sha256'),
  createdAt: tstz('created_at').notNull().defaultNow(),
  completedAt: tstz('completed_at'),
}, (t) => [
  index('files_account_seq_idx').on(t.accountId, t.seq),
  index('files_uploader_seq_idx').on(t.uploadedByIdentityId, t.seq),
  index('files_pending_created_idx').on(t.createdAt).where(sql`state = 'pending'`),
]);

/**
 * Which message attaches which file: written by the post and edit statements, removed with the
 * message (ON DELETE CASCADE). A person sees a file attached to a message of a channel or DM
 * they are a member of.
 */
export const messageFiles = pgTable('message_files', {
  channelId: text('channel_id').notNull(),
  tsMicros: bigint('ts_micros', { mode: 'bigint' }).notNull(),
  fileId: text('file_id').notNull().references(() => files.id),
  accountId: text('account_id').notNull(),
}, (t) => [
  primaryKey({ columns: [t.channelId, t.tsMicros, t.fileId] }),
  foreignKey({ columns: [t.channelId, t.tsMicros], foreignColumns: [messages.channelId, messages.tsMicros] }).onDelete('cascade'),
  index('message_files_file_idx').on(t.fileId),
]);

export const reactions = pgTable('reactions', {
  channelId: text('channel_id').notNull(),
  tsMicros: bigint('ts_micros', { mode: 'bigint' }).notNull(),
  emoji: text('emoji').notNull(),
  identityId: text('identity_id').notNull(),
  createdAt: tstz('created_at').notNull().defaultNow(),
}, (t) => [primaryKey({ columns: [t.channelId, t.tsMicros, t.emoji, t.identityId] })]);

/** A destructive step asked for through a credential, waiting for a person's confirmation. */
export const approvals = pgTable('approvals', {
  id: text('id').primaryKey(),
  accountId: text('account_id').notNull().references(() => accounts.id),
  action: text('action').notNull(), // e.g. message.delete
  target: jsonb('target').notNull(),
  summary: text('summary').notNull(),
  requestedByUserId: text('requested_by_user_id').notNull(),
  requestedByIdentityId: text('requested_by_identity_id').notNull(),
  ownerIdentityId: text('owner_identity_id'), // the author of what is destroyed, may approve
  status: text('status').notNull().default('pending'), // pending | approved | denied
  jobId: text('job_id'),
  decidedByUserId: text('decided_by_user_id'),
  createdAt: tstz('created_at').notNull().defaultNow(),
  expiresAt: tstz('expires_at').notNull(),
  decidedAt: tstz('decided_at'),
});

/**
 * Outbound webhook endpoints. `created_by_user_id` is the seat that pays each attempt's call unit.
 * Secrets and the custom Authorization value are AES-GCM ciphertexts (core crypto), never plaintext.
 * Deleting sets `deleted_at` (workers that already hold the id then see it is gone).
 */
export const webhookEndpoints = pgTable('webhook_endpoints', {
  id: text('id').primaryKey(), // whe_
  seq: bigserial('seq', { mode: 'number' }).notNull(),
  accountId: text('account_id').notNull().references(() => accounts.id),
  createdByUserId: text('created_by_user_id').notNull().references(() => users.id),
  createdVia: text('created_via').notNull(), // web_session | api_key | agent_token
  url: text('url').notNull(),
  events: text('events').array().notNull(),
  allChannels: boolean('all_channels').notNull(),
  channelIds: text('channel_ids').array().notNull().default(sql`'{}'::text[]`),
  payload: text('payload').notNull().default('pointers'), // pointers | text
  enabled: boolean('enabled').notNull(),
  disabledReason: text('disabled_reason'), // awaiting_enable | failing | gone | slow | manual
  /** events created before this moment are never sent to the endpoint (raised while disabled) */
  enabledAt: tstz('enabled_at'),
  /**
   * Set by enabling, cleared once the enable's test event is recorded: until then the endpoint's
   * event deliveries wait, so the test is delivered first (docs/webhooks.md "Enabling delivers a
   * test event first"). The time bounds the wait if the enabling request dies before clearing it.
   */
  enableTestUntil: tstz('enable_test_until'),
  disabledAt: tstz('disabled_at'),
  secretEnc: text('secret_enc').notNull(),
  secretPendingReveal: boolean('secret_pending_reveal').notNull().default(false),
  previousSecretEnc: text('previous_secret_enc'),
  previousValidUntil: tstz('previous_valid_until'),
  authorizationEnc: text('authorization_enc'),
  /** first failure since the last success: the `failing` rule disables after 24 h of failures */
  failingSince: tstz('failing_since'),
  lastSuccessAt: tstz('last_success_at'),
  lastFailureAt: tstz('last_failure_at'),
  version: integer('version').notNull().default(1),
  createdAt: tstz('created_at').notNull().defaultNow(),
  updatedAt: tstz('updated_at').notNull().defaultNow(),
  deletedAt: tstz('deleted_at'),
}, (t) => [
  index('webhook_endpoints_account_seq_idx').on(t.accountId, t.seq),
  index('webhook_endpoints_enabled_idx').on(t.accountId).where(sql`enabled AND deleted_at IS NULL`),
  // The maintenance's `failing` check reads the enabled endpoints in a failure streak, oldest
  // streak first (docs/webhooks.md "Automatic disabling"): only those rows are indexed. Built
  // CONCURRENTLY by an online step (src/online.ts).
  index('webhook_endpoints_failing_idx').on(t.failingSince, t.id).where(sql`enabled AND deleted_at IS NULL AND failing_since IS NOT NULL`),
]);

/**
 * The exact bytes sent for one event in one payload mode (or one test event), rendered once:
 * every retry and replay sends this body.
 */
export const webhookBodies = pgTable('webhook_bodies', {
  id: text('id').primaryKey(), // whb_
  /** no foreign key (as webhook_deliveries' account and endpoint): see the delivery log's note */
  accountId: text('account_id').notNull(),
  eventId: text('event_id').notNull(), // evt_ (events row, or a test event's own id)
  eventType: text('event_type').notNull(),
  mode: text('mode').notNull(), // pointers | text | test
  body: text('body').notNull(),
  createdAt: tstz('created_at').notNull().defaultNow(),
}, (t) => [uniqueIndex('webhook_bodies_event_mode_uq').on(t.eventId, t.mode)]);

/**
 * The delivery log: one row per attempt (its id is that attempt's X-Service-Delivery).
 * The hottest table of the worker (a row written and closed per delivery): its account and
 * endpoint columns have no foreign keys (nor has webhook_bodies' account): accounts and
 * endpoints are never deleted (an endpoint's DELETE sets deleted_at), and each key check took a
 * KEY SHARE lock on the same few account and endpoint rows from every concurrent fan-out write
 * (docs/performance.md). body_id keeps its key (the body is the row's own, written with it). A retry is
 * a new row in the same chain (`chain_id` = the first attempt's id) with attempt + 1. Status per
 * the spec's delivery table: pending | delivered | retrying | failed | dead.
 * `claimed_until` fences an attempt to one worker at a time; an expired claim may be taken again.
 */
export const webhookDeliveries = pgTable('webhook_deliveries', {
  /** unique by itself (random); the key is (id, created_at) because the table is partitioned by created_at */
  id: text('id').notNull(), // dlv_
  seq: bigserial('seq', { mode: 'number' }).notNull(),
  accountId: text('account_id').notNull(),
  endpointId: text('endpoint_id').notNull(),
  eventId: text('event_id').notNull(),
  eventType: text('event_type').notNull(),
  bodyId: text('body_id').notNull().references(() => webhookBodies.id),
  kind: text('kind').notNull(), // event | test | replay
  chainId: text('chain_id').notNull(),
  attempt: integer('attempt').notNull(),
  status: text('status').notNull(),
  nextRetryAt: tstz('next_retry_at'),
  claimedUntil: tstz('claimed_until'),
  responseStatus: integer('response_status'),
  latencyMs: integer('latency_ms'),
  error: text('error'),
  /** when the event was committed, for end-to-end latency */
  eventCreatedAt: tstz('event_created_at').notNull(),
  createdAt: tstz('created_at').notNull().defaultNow(),
  attemptedAt: tstz('attempted_at'),
}, (t) => [
  // Partitioned by week of created_at (migration 0006, docs/webhooks.md "Retention"): drizzle
  // does not model partitioning; the migration creates the table and the maintenance job its
  // weekly partitions.
  primaryKey({ name: 'webhook_deliveries_pkey', columns: [t.id, t.createdAt] }),
  index('webhook_deliveries_endpoint_seq_idx').on(t.endpointId, t.seq),
  // open rows of an account in due order: a dispatcher's lane reads its account's due rows with
  // it, and the sweep finds the accounts with rows overdue (docs/webhooks.md "Wake-ups")
  index('webhook_deliveries_open_account_idx').on(t.accountId, sql`COALESCE(next_retry_at, created_at)`, t.seq).where(sql`status IN ('pending', 'retrying')`),
  // the delivery log's filters (docs/performance.md "The delivery log at volume"): status, event type,
  // and event id through its bodies (body_id also serves the bodies purge's reference checks)
  index('webhook_deliveries_endpoint_status_seq_idx').on(t.endpointId, t.status, t.seq),
  index('webhook_deliveries_endpoint_type_seq_idx').on(t.endpointId, t.eventType, t.seq),
  index('webhook_deliveries_body_idx').on(t.bodyId),
  // No unique (endpoint, event) index: fan-out inserts an event's first deliveries only in the
  // statement that marks the event relayed (FANOUT_WRITE), so they are written once; the index
  // cost every insert and every close an entry (docs/performance.md).
]);

/**
 * Endpoint health and stats rollups (docs/webhooks.md "Health and stats rollups"), kept by
 * statement triggers on webhook_deliveries (migration 0006): each statement that inserts or
 * changes log rows appends its net effect per endpoint and hour to `webhook_health_deltas`
 * (append-only: concurrent deliveries never wait on one another's rollup rows); the
 * maintenance pass folds the deltas into `webhook_endpoint_hours` and `webhook_endpoint_health`.
 * Reads add the rollups and the deltas not yet folded, so they are exact at any moment.
 */
export const webhookHealthDeltas = pgTable('webhook_health_deltas', {
  endpointId: text('endpoint_id').notNull(),
  /** hour of attempted_at; null for a change to open rows only */
  hour: tstz('hour'),
  delivered: integer('delivered').notNull().default(0),
  failed: integer('failed').notNull().default(0),
  dead: integer('dead').notNull().default(0),
  other: integer('other').notNull().default(0),
  openCount: integer('open_count').notNull().default(0),
  lastSuccessAt: tstz('last_success_at'),
  lastFailureAt: tstz('last_failure_at'),
  /** latency histogram: {bucket: count} (webhook_latency_bucket) */
  hist: jsonb('hist').notNull().default({}),
  /** latencies newly recorded: [[seq, ms], ...] */
  recent: jsonb('recent').notNull().default([]),
}, (t) => [index('webhook_health_deltas_endpoint_idx').on(t.endpointId)]);

/** Attempts per endpoint and hour of attempted_at, by outcome, with a latency histogram (the stats charts, success_rate_24h). */
export const webhookEndpointHours = pgTable('webhook_endpoint_hours', {
  endpointId: text('endpoint_id').notNull(),
  hour: tstz('hour').notNull(),
  delivered: integer('delivered').notNull().default(0),
  failed: integer('failed').notNull().default(0),
  dead: integer('dead').notNull().default(0),
  other: integer('other').notNull().default(0),
  hist: jsonb('hist').notNull().default({}),
}, (t) => [primaryKey({ columns: [t.endpointId, t.hour] })]);

/** Per endpoint: open rows, last success and failure, and the last 50 latencies (the health median). */
export const webhookEndpointHealth = pgTable('webhook_endpoint_health', {
  endpointId: text('endpoint_id').primaryKey(),
  openCount: integer('open_count').notNull().default(0),
  lastSuccessAt: tstz('last_success_at'),
  lastFailureAt: tstz('last_failure_at'),
  recent: jsonb('recent').notNull().default([]),
});

/** In-app notifications to owners and admins (endpoint awaiting enable, auto-disabled, ...). */
export const notifications = pgTable('notifications', {
  id: text('id').primaryKey(), // ntf_
  seq: bigserial('seq', { mode: 'number' }).notNull(),
  accountId: text('account_id').notNull().references(() => accounts.id),
  userId: text('user_id').notNull().references(() => users.id),
  kind: text('kind').notNull(), // e.g. webhook.awaiting_enable, webhook.disabled
  data: jsonb('data').notNull().default({}),
  emailedAt: tstz('emailed_at'),
  readAt: tstz('read_at'),
  createdAt: tstz('created_at').notNull().defaultNow(),
}, (t) => [index('notifications_account_user_seq_idx').on(t.accountId, t.userId, t.seq)]);

/**
 * Channel mirrors (docs/mirrors.md): chosen channels posted as text lines into another chat
 * tool's incoming-webhook URL. One-way and unsigned; set up from a web session only.
 * `created_by_user_id` is the seat that pays each send's call unit and whose channel access
 * decides what is mirrored. `next_send_at` paces the sends (one message per second by default,
 * later after a 429's Retry-After); `claimed_until` fences a mirror's sending to one worker.
 */
export const mirrors = pgTable('mirrors', {
  id: text('id').primaryKey(), // mir_
  seq: bigserial('seq', { mode: 'number' }).notNull(),
  accountId: text('account_id').notNull().references(() => accounts.id),
  createdByUserId: text('created_by_user_id').notNull().references(() => users.id),
  url: text('url').notNull(),
  channelIds: text('channel_ids').array().notNull(),
  format: text('format').notNull(), // slack | discord | google_chat | teams
  enabled: boolean('enabled').notNull(),
  disabledReason: text('disabled_reason'), // manual | gone | failing
  /** messages posted before this moment are never mirrored (posted while disabled) */
  enabledAt: tstz('enabled_at'),
  disabledAt: tstz('disabled_at'),
  /** first failure since the last success: disabled as `failing` after 24 h of failures */
  failingSince: tstz('failing_since'),
  lastSuccessAt: tstz('last_success_at'),
  lastFailureAt: tstz('last_failure_at'),
  nextSendAt: tstz('next_send_at'),
  claimedUntil: tstz('claimed_until'),
  createdAt: tstz('created_at').notNull().defaultNow(),
  updatedAt: tstz('updated_at').notNull().defaultNow(),
  deletedAt: tstz('deleted_at'),
}, (t) => [
  index('mirrors_account_seq_idx').on(t.accountId, t.seq),
  index('mirrors_enabled_idx').on(t.accountId).where(sql`enabled AND deleted_at IS NULL`),
  // The maintenance's `failing` check of mirrors (the enabled mirrors in a failure streak, oldest
  // streak first), as webhook_endpoints_failing_idx; built by an online step (online.ts).
  index('mirrors_failing_idx').on(t.failingSince, t.id).where(sql`enabled AND deleted_at IS NULL AND failing_since IS NOT NULL`),
]);

/**
 * A mirror's queue: one line per message posted in a covered channel, written by the fan-out,
 * waiting to be sent. Lines taken into a send are deleted in the transaction that writes the
 * send's delivery row (which keeps the rendered body): this table holds only what waits.
 */
export const mirrorLines = pgTable('mirror_lines', {
  seq: bigserial('seq', { mode: 'number' }).primaryKey(),
  mirrorId: text('mirror_id').notNull(),
  accountId: text('account_id').notNull(),
  eventId: text('event_id').notNull(),
  channelName: text('channel_name').notNull(),
  authorName: text('author_name').notNull(),
  text: text('text').notNull(),
  isReply: boolean('is_reply').notNull(),
  createdAt: tstz('created_at').notNull().defaultNow(),
}, (t) => [uniqueIndex('mirror_lines_mirror_event_uq').on(t.mirrorId, t.eventId)]);

/**
 * A mirror's delivery log: one row per attempt, with the statuses of webhook_deliveries
 * (pending | delivered | retrying | failed | dead). `body` is the exact message sent (one or more
 * merged lines); a retry is a new row in the same chain (`chain_id` = the first attempt's id)
 * with attempt + 1 and the same body. Kept 30 days, like the webhook delivery log.
 */
export const mirrorDeliveries = pgTable('mirror_deliveries', {
  id: text('id').primaryKey(), // mdl_
  seq: bigserial('seq', { mode: 'number' }).notNull(),
  accountId: text('account_id').notNull(),
  mirrorId: text('mirror_id').notNull(),
  kind: text('kind').notNull(), // lines | test
  chainId: text('chain_id').notNull(),
  attempt: integer('attempt').notNull(),
  status: text('status').notNull(),
  body: text('body').notNull(),
  lineCount: integer('line_count').notNull(),
  nextRetryAt: tstz('next_retry_at'),
  responseStatus: integer('response_status'),
  latencyMs: integer('latency_ms'),
  error: text('error'),
  createdAt: tstz('created_at').notNull().defaultNow(),
  attemptedAt: tstz('attempted_at'),
}, (t) => [
  index('mirror_deliveries_mirror_seq_idx').on(t.mirrorId, t.seq),
  index('mirror_deliveries_open_idx').on(t.mirrorId, t.nextRetryAt).where(sql`status IN ('pending', 'retrying')`),
  index('mirror_deliveries_created_brin').using('brin', t.createdAt),
]);
