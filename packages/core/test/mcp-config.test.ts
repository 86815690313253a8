import { ConfigError, loadConfig } from '../src/config';
import { PLAN_LIMITS } from '../src/plans';

const KEY = 'ab'.repeat(32);

describe('MCP configuration (MCP_PORT default 3002, MCP_OPS_PORT default 9466; README: Configuration)', () => {
  test('defaults: port 3002, the API reached on loopback at API_PORT, sessions idle out after 60 minutes', () => {
    expect(loadConfig({ SECRETS_KEY: KEY })).toMatchObject({ mcpPort: 3002, mcpApiUrl: 'http://127.0.0.1:3000', mcpSessionIdleMinutes: 60 });
    expect(loadConfig({ SECRETS_KEY: KEY, API_PORT: '4000' }).mcpApiUrl).toBe('http://127.0.0.1:4000');
    expect(loadConfig({ SECRETS_KEY: KEY, MCP_API_URL: 'http://api:3000/' }).mcpApiUrl).toBe('http://api:3000');
  });

  test('the operations port: 9466 by default, beside the API\'s 9464 and the worker\'s 9465; 0 = any free port', () => {
    expect(loadConfig({ SECRETS_KEY: KEY })).toMatchObject({ opsPort: 9464, workerOpsPort: 9465, mcpOpsPort: 9466 });
    expect(loadConfig({ SECRETS_KEY: KEY, MCP_OPS_PORT: '0' }).mcpOpsPort).toBe(0);
  });

  test('bad values stop boot naming them', () => {
    expect(() => loadConfig({ SECRETS_KEY: KEY, MCP_PORT: 'x' })).toThrow(/MCP_PORT/);
    expect(() => loadConfig({ SECRETS_KEY: KEY, MCP_OPS_PORT: '70000' })).toThrow(/MCP_OPS_PORT/);
    expect(() => loadConfig({ SECRETS_KEY: KEY, MCP_API_URL: 'ftp://x' })).toThrow(ConfigError);
    expect(() => loadConfig({ SECRETS_KEY: KEY, MCP_SESSION_IDLE_MINUTES: '0' })).toThrow(/MCP_SESSION_IDLE_MINUTES/);
  });

  test('concurrent MCP sessions per seat: Starter 5, Pro 10, Scale 25 (docs/mcp.md)', () => {
    expect([PLAN_LIMITS.starter, PLAN_LIMITS.pro, PLAN_LIMITS.scale].map((p) => p.mcpSessionsPerSeat)).toEqual([5, 10, 25]);
  });
});
