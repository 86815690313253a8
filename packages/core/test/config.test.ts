import { ConfigError, loadConfig } from '../src/config';

const KEY = 'ab'.repeat(32);

describe('config is validated once, at boot (README: Configuration)', () => {
  test('defaults match the documented env contract', () => {
    const c = loadConfig({ SECRETS_KEY: KEY });
    expect(c).toMatchObject({
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/teamchat',
      redisUrl: 'redis://127.0.0.1:6379',
      apiPort: 3000,
      webPort: 3001,
      publicApiUrl: 'http://localhost:3000',
      publicWebUrl: 'http://localhost:3001',
      limitsEnabled: true,
    });
    expect(Object.isFrozen(c)).toBe(true);
  });

  test('a bad value stops boot with a message naming it', () => {
    expect(() => loadConfig({ SECRETS_KEY: 'not-hex' })).toThrow(ConfigError);
    expect(() => loadConfig({ SECRETS_KEY: KEY, API_PORT: 'eighty' })).toThrow(/API_PORT/);
    expect(() => loadConfig({ SECRETS_KEY: KEY, DATABASE_URL: 'mysql://x' })).toThrow(/DATABASE_URL/);
  });

  test('SECRETS_KEY is mandatory in production (64 hex characters)', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/SECRETS_KEY is required/);
    expect(() => loadConfig({ NODE_ENV: 'production', SECRETS_KEY: 'ab'.repeat(31) })).toThrow(/SECRETS_KEY/);
    expect(loadConfig({ NODE_ENV: 'production', SECRETS_KEY: KEY }).secretsKey).toBe(KEY);
  });

  test('public URLs lose a trailing slash so links are built one way', () => {
    const c = loadConfig({ SECRETS_KEY: KEY, PUBLIC_API_URL: 'https://api.example.com/', PUBLIC_WEB_URL: 'https://app.example.com/' });
    expect(c.publicApiUrl).toBe('https://api.example.com');
    expect(c.publicWebUrl).toBe('https://app.example.com');
  });

  test('LIMITS_ENABLED=false is refused at boot when NODE_ENV=production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', SECRETS_KEY: KEY, LIMITS_ENABLED: 'false' })).toThrow(/LIMITS_ENABLED/);
    expect(() => loadConfig({ NODE_ENV: 'production', SECRETS_KEY: KEY }, { limitsEnabled: false })).toThrow(ConfigError);
    expect(loadConfig({ NODE_ENV: 'production', SECRETS_KEY: KEY, LIMITS_ENABLED: 'true' }).limitsEnabled).toBe(true);
    // benchmarks and development may still switch them off
    expect(loadConfig({ NODE_ENV: 'development', SECRETS_KEY: KEY, LIMITS_ENABLED: 'false' }).limitsEnabled).toBe(false);
  });
});
