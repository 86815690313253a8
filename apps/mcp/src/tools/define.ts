import { z } from 'zod/v4';
import { CONTENT_LIMITS, TS_PATTERN, idPattern, type IdKind } from '@teamchat/core';
import type { ApiClient } from '@teamchat/client';
import { routeNamed, type RouteId } from '@teamchat/contract';

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/** What a typed client call answers (openapi-fetch): the response, and its parsed body. */
export interface ClientAnswer {
  response: Response;
  data?: unknown;
  error?: unknown;
}

/**
 * The one REST call a tool makes, through the typed client (packages/client), in the account of
 * the caller's credential: a change to the route's schema is a type error in the tool.
 */
export type ToolCall<A> = (api: ApiClient, accountId: string, args: A) => Promise<ClientAnswer>;

export type Toolset = 'Channels and messages' | 'Direct messages' | 'Members and identities' | 'Webhooks' | 'Account and jobs' | 'Audit';

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  /** true when the tool reaches outside the service (a webhook receiver) */
  openWorldHint: boolean;
}

export interface ToolDef {
  name: string;
  title: string;
  description: string;
  toolset: Toolset;
  /** the scope the REST endpoint needs; tools/list shows the tool only to credentials holding it */
  scope: string;
  method: HttpMethod;
  /** the REST endpoint, as the spec writes it */
  path: string;
  annotations: ToolAnnotations;
  input: z.ZodObject;
  call: ToolCall<any>;
}

const READ: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
const WRITE: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };

/** Read tools: readOnlyHint (and so idempotent). */
export const reads = READ;
/** Writes that add or change but never remove; pass `idempotent` where repeating changes nothing more. */
export const writes = (over: Partial<ToolAnnotations> = {}): ToolAnnotations => ({ ...WRITE, ...over });
export const destructive = (over: Partial<ToolAnnotations> = {}): ToolAnnotations => ({ ...WRITE, destructiveHint: true, ...over });

/**
 * Defines a tool with its input shape typed into `request`. Its scope, method and path are those
 * of the route it calls, from the route's declaration (packages/contract).
 */
export function defineTool<S extends z.ZodRawShape>(
  def: Omit<ToolDef, 'input' | 'call' | 'scope' | 'method' | 'path'> & { route: RouteId; input: S; call: ToolCall<z.infer<z.ZodObject<S>>> },
): ToolDef {
  const { route: id, ...rest } = def;
  const route = routeNamed(id);
  if (!route.scope) throw new Error(`tool ${def.name}: route ${id} needs no scope, so no tool may call it`);
  return { ...rest, scope: route.scope, method: route.method, path: route.path, input: z.object(def.input) };
}

/**
 * An id argument: exactly its kind's form (`ch_…`, `job_…`, `whe_…`: core `idPattern`), so no
 * argument can carry `..`, `/` or anything else that would steer the REST call to another path.
 * The typed client refuses a path parameter of `.`, `..` or nothing whatever the tool
 * (packages/client `pathOf`).
 */
export const idOf = (kind: IdKind) => z.string().regex(idPattern(kind), `must be an id of the form ${idPattern(kind).source.slice(1, -1)}`);

// Fields shared by many tools, with descriptions an agent can act on.
export const fields = {
  channelId: idOf('channel').describe('Channel id (`id` from list_channels), or a direct message id (from list_dms or open_dm).'),
  ts: z.string().regex(TS_PATTERN).describe("The message's `ts`, its id: seconds and microseconds, e.g. \"1718000000.000100\"."),
  limit: z.number().int().min(1).max(200).optional().describe('Items per page, 1..200 (default 50).'),
  cursor: z.string().min(1).max(2048).optional().describe('`next_cursor` of the previous page; omit for the first page. `next_cursor: null` means there is no more.'),
  idempotencyKey: z.guid().optional().describe('A UUID you choose: repeating the call with the same key within 24 hours returns the first result instead of creating a second object (sent as Idempotency-Key).'),
  clientRef: z.string().max(128).optional().describe('Your own reference (up to 128 characters), echoed back as `client_ref`.'),
  text: z.string().max(16384).describe('Message text, up to 16 KB. Mention someone with <@identity_id>; <!channel> and <!here> notify the channel.'),
  links: z.array(z.url()).max(20).optional().describe('Up to 20 http(s) links attached to the message.'),
  attachments: z
    .array(z.object({
      title: z.string().max(256).optional(),
      url: z.url().optional(),
      file_id: z.string().max(64).optional(),
      mime_type: z.string().max(127).optional(),
      size: z.number().int().min(0).optional(),
    }))
    .max(10)
    .optional()
    .describe('Up to 10 attachments, each with a `url` or a `file_id`.'),
  emoji: z.string().regex(CONTENT_LIMITS.emoji).describe('Emoji name without colons, e.g. "thumbsup", "+1", "white_check_mark".'),
};

export const pageQuery = (args: { limit?: number; cursor?: string }) => ({ limit: args.limit, cursor: args.cursor });
