import { decryptSecret, deriveKey, encryptSecret, hashPassword, verifyPassword } from '../src/crypto';

describe('secrets at rest: AES-256-GCM under a key derived from SECRETS_KEY', () => {
  const key = deriveKey('cd'.repeat(32), 'webhook-secrets');

  test('round trip, a fresh IV every time, and no plaintext in the sealed form', () => {
    const a = encryptSecret(key, 'whsec_super_secret');
    const b = encryptSecret(key, 'whsec_super_secret');
    expect(a).not.toBe(b);
    expect(a).not.toContain('super_secret');
    expect(decryptSecret(key, a)).toBe('whsec_super_secret');
  });

  test('tampering, or another purpose key, fails to decrypt', () => {
    const sealed = encryptSecret(key, 'value');
    const parts = sealed.split('.');
    parts[3] = Buffer.from('other').toString('base64url');
    expect(() => decryptSecret(key, parts.join('.'))).toThrow();
    expect(() => decryptSecret(deriveKey('cd'.repeat(32), 'cursor'), sealed)).toThrow();
  });
});

test('passwords: scrypt hashes verify only the right password', async () => {
  const stored = await hashPassword('correct horse');
  expect(stored).toMatch(/^scrypt\$/);
  expect(await verifyPassword('correct horse', stored)).toBe(true);
  expect(await verifyPassword('wrong horse', stored)).toBe(false);
});
