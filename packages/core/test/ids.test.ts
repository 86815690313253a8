import { newId, randomIdToken, randomToken } from '../src/ids';

describe('ids (ids drawn from a pooled CSPRNG buffer, secrets from fresh bytes)', () => {
  test('newId: prefix and 20 base36 characters, no repeat across many pool refills', () => {
    const ids = Array.from({ length: 2000 }, () => newId('event')); // 40,000 bytes: ~10 refills of the 4 KiB pool
    for (const id of ids) expect(id).toMatch(/^evt_[0-9a-z]{20}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('randomIdToken: any length, including one longer than the pool; randomToken unchanged', () => {
    expect(randomIdToken(1)).toMatch(/^[0-9a-z]$/);
    expect(randomIdToken(4097)).toMatch(/^[0-9a-z]{4097}$/);
    expect(randomToken(40)).toMatch(/^[0-9a-z]{40}$/);
    // consecutive draws never share bytes: two tokens straddling a refill differ
    const seen = new Set(Array.from({ length: 500 }, () => randomIdToken(13)));
    expect(seen.size).toBe(500);
  });
});
