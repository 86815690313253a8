import { loadConfig } from '@teamchat/core';
import { opsPortFlag } from '../src/args';

describe('operations: the worker ops port (WORKER_OPS_PORT, --ops-port)', () => {
  test('--ops-port N and --ops-port=N give the value; absent gives undefined', () => {
    expect(opsPortFlag(['--ops-port', '0'])).toBe('0');
    expect(opsPortFlag(['--ops-port=9470'])).toBe('9470');
    expect(opsPortFlag([])).toBeUndefined();
    expect(opsPortFlag(['--ops-port'])).toBe('');
  });

  test('the flag goes through the config validation like the variable', () => {
    const base = { SECRETS_KEY: 'ab'.repeat(32) };
    expect(loadConfig(base)).toMatchObject({ opsPort: 9464, workerOpsPort: 9465, shutdownTimeoutMs: 25_000 });
    expect(loadConfig({ ...base, WORKER_OPS_PORT: opsPortFlag(['--ops-port', '0']) }).workerOpsPort).toBe(0);
    expect(() => loadConfig({ ...base, WORKER_OPS_PORT: opsPortFlag(['--ops-port', 'x']) })).toThrow(/WORKER_OPS_PORT/);
    expect(() => loadConfig({ ...base, OPS_PORT: '70000' })).toThrow(/OPS_PORT/);
  });
});
