import { createHmac, timingSafeEqual } from 'node:crypto';

/** A receiver's check of X-Service-Signature (spec: Signature): one of the v1 values must match. */
export function signedWith(secret: string, body: string, header: string): boolean {
  const parts = header.split(',');
  const t = parts.find((p) => p.startsWith('t='))?.slice(2);
  if (!t) return false;
  const want = Buffer.from(createHmac('sha256', secret).update(`${t}.${body}`).digest('hex'));
  return parts.filter((p) => p.startsWith('v1=')).some((p) => {
    const got = Buffer.from(p.slice(3));
    return got.length === want.length && timingSafeEqual(got, want);
  });
}

export const v1Count = (header: string): number => header.split(',').filter((p) => p.startsWith('v1=')).length;
