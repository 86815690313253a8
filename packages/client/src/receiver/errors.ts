/**
 * Why a delivery was refused. A receiver answers 400 (or 401) to any of them and keeps nothing.
 * - `no_signature`: neither `X-Service-Signature` nor the Standard Webhooks headers are present;
 * - `malformed_header`: a signature header is present but not in its documented form;
 * - `bad_signature`: no signature matches any of the secrets (wrong secret, or a changed body);
 * - `stale_timestamp`: a signature matches but its timestamp is outside the tolerance (a replay);
 * - `malformed_body`: the signature matches but the body is not a JSON event object;
 * - `no_secret`: the receiver was given no secret to check with.
 */
export type VerificationFailure = 'no_signature' | 'malformed_header' | 'bad_signature' | 'stale_timestamp' | 'malformed_body' | 'no_secret';

export class WebhookVerificationError extends Error {
  readonly name = 'WebhookVerificationError';
  constructor(
    readonly reason: VerificationFailure,
    message: string,
  ) {
    super(message);
  }
}
