/** `npm run docs:mcp`: regenerates the tool reference in docs/mcp.md from the tool definitions (apps/mcp/src/tools). */
import fs from 'node:fs';
import path from 'node:path';
import { withReference } from '../apps/mcp/src/docs/reference';

const file = path.resolve(__dirname, '..', 'docs', 'mcp.md');
const before = fs.readFileSync(file, 'utf8');
const after = withReference(before);
if (after !== before) fs.writeFileSync(file, after);
process.stdout.write(after === before ? 'docs/mcp.md is up to date\n' : 'docs/mcp.md updated\n');
