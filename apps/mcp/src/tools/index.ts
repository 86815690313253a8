import { accountTools } from './account';
import type { ToolDef } from './define';
import { directoryTools } from './directory';
import { messagingTools } from './messaging';
import { webhookTools } from './webhooks';

export type { ToolDef } from './define';

/** Every tool, in the order of the reference (docs/mcp.md). */
export const TOOLS: readonly ToolDef[] = [...messagingTools, ...directoryTools, ...webhookTools, ...accountTools];

const byName = new Map(TOOLS.map((t) => [t.name, t]));
export const toolNamed = (name: string): ToolDef | undefined => byName.get(name);

/** The tools a caller with these scopes may use. */
export const toolsFor = (scopes: ReadonlySet<string>): ToolDef[] => TOOLS.filter((t) => scopes.has(t.scope));
