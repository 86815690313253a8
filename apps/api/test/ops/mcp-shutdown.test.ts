import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { newAccount, newKey, startHarness, type Harness } from '../../../../test/support/harness';
import { serviceEnv, startService, type Service } from '../../../../test/support/processes';

/**
 * Graceful shutdown everywhere (docs/operations.md, "Graceful shutdown"): the MCP server process, with an MCP session
 * open (its GET stream held by the SDK client), drains on SIGTERM and exits 0 (it shares
 * onShutdownSignals with the API, whose second-SIGTERM rule shutdown.test.ts checks). Real
 * processes: the API and the MCP server as `npm start` runs them.
 */
jest.setTimeout(90_000);

let h: Harness;
const running: Service[] = [];
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });
// SIGTERM, not SIGKILL: the tsx CLI passes it on to the node process it runs (a SIGKILL would orphan it).
afterEach(async () => {
  for (const s of running.splice(0)) {
    if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGTERM');
    await s.exited;
  }
});

async function startStack(): Promise<{ mcp: Service; mcpUrl: URL }> {
  const env = serviceEnv({ DATABASE_URL: h.deps.config.databaseUrl, SECRETS_KEY: h.deps.config.secretsKey });
  const api = startService('apps/api/src/server.ts', env);
  running.push(api);
  const apiPort = (await api.waitFor((l) => l.message === 'listening', 40_000)).api_port as number;
  const mcp = startService('apps/mcp/src/server.ts', { ...env, MCP_PORT: '0', MCP_API_URL: `http://127.0.0.1:${apiPort}` });
  running.push(mcp);
  const port = (await mcp.waitFor((l) => l.message === 'listening', 40_000)).mcp_port as number;
  return { mcp, mcpUrl: new URL(`http://127.0.0.1:${port}/mcp`) };
}

test('SIGTERM with an open MCP session: the session is closed, the drain finishes, pools close, exit 0', async () => {
  const a = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, ['account:manage']);
  const { mcp, mcpUrl } = await startStack();
  const client = new Client({ name: 'shutdown-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  expect((await client.listTools()).tools.length).toBeGreaterThan(0);

  mcp.child.kill('SIGTERM');
  expect(await mcp.exited).toEqual({ code: 0, signal: null });
  // The shutdown's own steps (a warm-up cut short by the signal logs its step on another line).
  expect(mcp.lines.filter((l) => l.message === 'shutdown step done').map((l) => l.step)).toEqual(['http', 'pools', 'ops']);
  await client.close().catch(() => undefined);
});
