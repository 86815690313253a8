import { createHmac } from 'node:crypto';
import { deriveKey, safeEqual } from '../crypto';

/**
 * The local driver's upload URL token: an HMAC (key derived from SECRETS_KEY for this one use)
 * over the file id, its account, the reserved size and the expiry, so a URL is good for one file,
 * one size and a limited time, and needs no cookie (docs/api.md "Files").
 */
export interface UploadClaim {
  fileId: string;
  accountId: string;
  size: number;
  /** unix seconds */
  expires: number;
}

const message = (c: UploadClaim) => `${c.fileId}\n${c.accountId}\n${c.size}\n${c.expires}`;

export function signUpload(secretsKey: string, claim: UploadClaim): string {
  return createHmac('sha256', deriveKey(secretsKey, 'file-upload')).update(message(claim)).digest('base64url');
}

/** Whether `signature` was made by signUpload for exactly this claim (expiry is checked by the caller). */
export function verifyUpload(secretsKey: string, claim: UploadClaim, signature: string): boolean {
  return safeEqual(signUpload(secretsKey, claim), signature);
}
