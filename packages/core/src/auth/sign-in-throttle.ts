import type { RedisClient } from '../redis';
import { signInAddressKey, signInEmailKey, type RedisKeyConfig } from '../redis-keys';
import { createHash } from 'node:crypto';
import { isIPv6 } from 'node:net';
import type { Logger } from '../logger';
import { redisAvailability } from '../limits/availability';
import { LocalWindowCounter } from '../limits/local-window';
import { rateLimited } from '../limits/refusals';
import { RedisScript } from '../limits/units';

/** Failed sign-ins allowed per email in the window before further attempts are refused. */
export const SIGN_IN_MAX_FAILURES = 10;
/** The window, in seconds (15 minutes), counted from the first failure. */
export const SIGN_IN_WINDOW_S = 15 * 60;
/** Sign-in attempts allowed per client address in its window (a successful one is given back). */
export const SIGN_IN_MAX_PER_ADDRESS = 60;
/** The per-address window, in seconds, counted from the first attempt. */
export const SIGN_IN_ADDRESS_WINDOW_S = 60;

const hashed = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 32);

function emailKey(keys: RedisKeyConfig, email: string): string {
  // Hashed so the Redis keyspace holds no email addresses.
  return signInEmailKey(keys, hashed(email.trim().toLowerCase()));
}

/**
 * The part of a client address that one client controls: an IPv4 address (IPv4-mapped IPv6
 * included) whole, an IPv6 address by its /64, since one subscriber usually holds a whole /64.
 */
export function clientAddressKey(address: string | undefined): string {
  if (!address) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1];
  if (!isIPv6(address)) return address;
  const [head, tail = ''] = address.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = address.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`;
}

function addressKey(keys: RedisKeyConfig, address: string | undefined): string {
  return signInAddressKey(keys, hashed(clientAddressKey(address)));
}

/**
 * Reserves one attempt before any password work, in one round trip: refused (with the TTL of the
 * full counter) when the email has SIGN_IN_MAX_FAILURES or the address SIGN_IN_MAX_PER_ADDRESS,
 * else both counters count it. So at most the allowed number of attempts ever reach the password
 * hash in a window, whatever the concurrency.
 */
const RESERVE_SCRIPT = new RedisScript(`
  local e = tonumber(redis.call('GET', KEYS[1]) or '0')
  if e >= tonumber(ARGV[1]) then return {1, redis.call('TTL', KEYS[1])} end
  local a = tonumber(redis.call('GET', KEYS[2]) or '0')
  if a >= tonumber(ARGV[3]) then return {2, redis.call('TTL', KEYS[2])} end
  redis.call('INCR', KEYS[1])
  redis.call('EXPIRE', KEYS[1], ARGV[2], 'NX')
  redis.call('INCR', KEYS[2])
  redis.call('EXPIRE', KEYS[2], ARGV[4], 'NX')
  return {0, 0}
`);

/** Gives back one reserved attempt of each key named (never below zero). */
const REFUND_SCRIPT = new RedisScript(`
  for i = 1, #KEYS do
    if tonumber(redis.call('GET', KEYS[i]) or '0') > 0 then redis.call('DECR', KEYS[i]) end
  end
  return 0
`);

/**
 * While Redis is away attempts are counted in this process (docs/limits.md, 'When Redis is away'),
 * so the throttle still holds per process; once Redis answers again its count is the one that matters.
 */
const localCounts = new WeakMap<RedisClient, { emails: LocalWindowCounter; addresses: LocalWindowCounter }>();
function local(redis: RedisClient) {
  let counters = localCounts.get(redis);
  if (!counters) {
    counters = { emails: new LocalWindowCounter(SIGN_IN_WINDOW_S * 1000), addresses: new LocalWindowCounter(SIGN_IN_ADDRESS_WINDOW_S * 1000) };
    localCounts.set(redis, counters);
  }
  return counters;
}

/** Runs `op` on Redis when it is usable; undefined (after counting the degraded decision) when not. */
function onRedis<T>(redis: RedisClient, log: Logger | undefined, op: () => Promise<T>): Promise<{ value: T } | undefined> {
  return redisAvailability(redis).inRedisElse('sign_in_throttle_local', log, Date.now(), async () => ({ value: await op() }), () => undefined);
}

const refuseEmail = (retryAfterS: number) => rateLimited({
  scope: 'sign_in',
  retryAfterS,
  message: (s) => `Too many failed sign-ins for this email; retry after ${s} s.`,
});

const refuseAddress = (retryAfterS: number) => rateLimited({
  scope: 'sign_in',
  retryAfterS,
  message: (s) => `Too many sign-in attempts from this address; retry after ${s} s.`,
});

/** How a reserved attempt ended: a success clears the email's failures and gives the address its attempt back. */
export type SignInOutcome = 'succeeded' | 'failed' | 'not_checked';

export interface SignInReservation {
  /**
   * `succeeded`: the email's count is cleared, the address's attempt given back; `failed` (wrong
   * email or password): both stay counted; `not_checked` (the attempt broke before an answer):
   * both given back.
   */
  settle(outcome: SignInOutcome): Promise<void>;
}

/**
 * Reserves one sign-in attempt for `email` from `address` before the password is checked;
 * refuses with 429 rate_limited (scope `sign_in`, Retry-After) when either is used up.
 */
export async function reserveSignIn(
  redis: RedisClient,
  keys: RedisKeyConfig,
  input: { email: string; address: string | undefined },
  log?: Logger,
): Promise<SignInReservation> {
  const ek = emailKey(keys, input.email);
  const ak = addressKey(keys, input.address);
  const got = await onRedis(redis, log, () => RESERVE_SCRIPT.run<[number, number]>(
    redis, [ek, ak], [SIGN_IN_MAX_FAILURES, SIGN_IN_WINDOW_S, SIGN_IN_MAX_PER_ADDRESS, SIGN_IN_ADDRESS_WINDOW_S],
  ));
  if (got) {
    const [refused, ttl] = got.value;
    if (refused === 1) throw refuseEmail(ttl > 0 ? ttl : SIGN_IN_WINDOW_S);
    if (refused === 2) throw refuseAddress(ttl > 0 ? ttl : SIGN_IN_ADDRESS_WINDOW_S);
  } else {
    const now = Date.now();
    const { emails, addresses } = local(redis);
    const e = emails.peek(ek, now);
    if (e && e.count >= SIGN_IN_MAX_FAILURES) throw refuseEmail((e.resetAt - now) / 1000);
    const a = addresses.peek(ak, now);
    if (a && a.count >= SIGN_IN_MAX_PER_ADDRESS) throw refuseAddress((a.resetAt - now) / 1000);
    emails.hit(ek, now);
    addresses.hit(ak, now);
  }
  return {
    async settle(outcome) {
      if (outcome === 'failed') return;
      const counters = local(redis);
      const now = Date.now();
      if (outcome === 'succeeded') counters.emails.reset(ek);
      else counters.emails.unhit(ek, now);
      counters.addresses.unhit(ak, now);
      await onRedis(redis, log, async () => {
        if (outcome === 'succeeded') await redis.del(ek);
        await REFUND_SCRIPT.run(redis, outcome === 'succeeded' ? [ak] : [ek, ak], []);
      });
    },
  };
}
