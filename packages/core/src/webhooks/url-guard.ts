import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { errors } from '../errors';
import { memoBounded } from '../bounded-memo';
import { withTimeout } from '../ops/timeout';

/**
 * The webhook URL guard, run at registration, on every URL change, and again before every
 * attempt: `https` only; the name is resolved and EVERY address it resolves to must be a public
 * unicast address (a name that also resolves to a private address is refused: DNS rebinding);
 * the caller then connects to the vetted `address`, never resolving the name a second time.
 *
 * IPv4: ipaddr.js's `unicast` range (loopback, private, link-local with the cloud metadata address
 * 169.254.169.254, CGNAT, multicast, broadcast, reserved and unspecified are other ranges) minus
 * benchmarking. IPv6 is an allow-list, not a deny-list: only global unicast 2000::/3 minus the
 * special-purpose blocks below, so a form nobody listed (IPv4-compatible ::/96, ::ffff:ffff:…,
 * site-local, SRv6 SIDs) is refused by default. The forms that embed an IPv4 address and really
 * lead to it (IPv4-mapped ::ffff:0:0/96, IPv4-translated ::ffff:0:0:0/96, NAT64 64:ff9b::/96,
 * 6to4 2002::/16) are judged by the IPv4 address they embed. docs/webhooks.md "URL refusals".
 * `allowedHosts` (WEBHOOK_ALLOWED_HOSTS, development and tests only) exempts host names from
 * the address rule, never from `https`.
 */
export interface VettedUrl {
  url: URL;
  /** the address to connect to */
  address: string;
  family: 4 | 6;
  /** PEM of an extra CA trusted for this target only: a development receiver's (dev-receivers.ts) */
  ca?: string;
}

export type UrlRefusal = 'invalid_url' | 'not_https' | 'private_address' | 'unresolvable';

/** IPv4 unicast ranges ipaddr.js files under `unicast` that are still not the public internet. */
const IPV4_EXTRA_BLOCKED = [ipaddr.IPv4.parseCIDR('198.18.0.0/15')]; // benchmarking (RFC 2544)

/** Global unicast: the only IPv6 block a webhook may go to (IANA IPv6 address space). */
const IPV6_GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');

/**
 * Special-purpose blocks inside 2000::/3 (IANA IPv6 special-purpose registry) that are refused.
 * 2001::/23 is refused whole, its globally reachable sub-blocks included: they are anycast service
 * addresses (PCP, TURN), AMT relays, AS112 sinks and ORCHID identifiers, never a webhook receiver,
 * and Teredo (2001::/32) tunnels to an address the guard cannot see.
 */
const IPV6_BLOCKED = [
  ipaddr.IPv6.parseCIDR('2001::/23'), // IETF protocol assignments (Teredo, benchmarking, ORCHID, ...)
  ipaddr.IPv6.parseCIDR('2001:db8::/32'), // documentation
  ipaddr.IPv6.parseCIDR('3fff::/20'), // documentation (RFC 9637)
];

/**
 * IPv6 ranges (ipaddr.js names) that lead to the IPv4 address they embed, and where it sits.
 * ipaddr.js files the local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215) under `rfc6052` too; only
 * the well-known /96 holds its IPv4 address in the last 32 bits, and a local-use prefix
 * translates through the operator's own NAT64 (into a private network as easily as out of
 * it), so the /48 is refused outright (isPublicIPv6).
 */
const EMBEDDED_IPV4: Record<string, (bytes: number[]) => number[]> = {
  ipv4Mapped: (b) => b.slice(12), // ::ffff:0:0/96
  rfc6145: (b) => b.slice(12), // IPv4-translated ::ffff:0:0:0/96
  rfc6052: (b) => b.slice(12), // NAT64 well-known prefix 64:ff9b::/96
  '6to4': (b) => b.slice(2, 6), // 2002:V4ADDR::/48
};
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96');

function refuse(reason: UrlRefusal, message: string): never {
  throw errors.invalid(message, { field: 'url', reason });
}

/**
 * What an address literal is never changes: the verdicts of the addresses seen lately are kept
 * (the guard runs before every attempt, and parsing and matching the ranges was ~2.5 % of a
 * worker's CPU). Only the verdict on the literal is kept; a name's answer is used again for
 * RESOLUTION_REUSE_MS at most (resolveShared).
 */
const verdicts = new Map<string, boolean>();
const VERDICTS_MAX = 10_000;

/** Whether an address is a public unicast address a webhook may be sent to. */
export function isPublicAddress(text: string): boolean {
  return memoBounded(verdicts, VERDICTS_MAX, text, judgeAddress);
}

/**
 * An IPv6 literal with its trailing dotted quad spelled as two hex groups: ipaddr.js reads
 * `::1.2.3.4` (IPv4-compatible) as `::ffff:1.2.3.4` (IPv4-mapped), which would judge it by its IPv4
 * part; the WHATWG URL parser and the socket read it as `::102:304`.
 */
function hexTail(text: string): string {
  const m = /^(.*:)(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (!m || text.indexOf(':') === -1) return text;
  const [a, b, c, d] = m.slice(2).map(Number);
  if ([a, b, c, d].some((n) => n > 255)) return text;
  return `${m[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

function judgeAddress(raw: string): boolean {
  const text = hexTail(raw);
  if (!ipaddr.isValid(text)) return false;
  const addr = ipaddr.parse(text);
  return addr.kind() === 'ipv4' ? isPublicIPv4(addr as ipaddr.IPv4) : isPublicIPv6(addr as ipaddr.IPv6);
}

function isPublicIPv4(addr: ipaddr.IPv4): boolean {
  return addr.range() === 'unicast' && !IPV4_EXTRA_BLOCKED.some((cidr) => addr.match(cidr));
}

function isPublicIPv6(addr: ipaddr.IPv6): boolean {
  const range = addr.range();
  if (range === 'rfc6052' && !addr.match(NAT64_WELL_KNOWN)) return false;
  const embedded = EMBEDDED_IPV4[range];
  if (embedded) return isPublicIPv4(ipaddr.fromByteArray(embedded(addr.toByteArray())) as ipaddr.IPv4);
  return addr.match(IPV6_GLOBAL_UNICAST) && !IPV6_BLOCKED.some((cidr) => addr.match(cidr));
}

/** Parses and checks the URL's form only (no resolution). */
export function parseWebhookUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('invalid_url', 'url is not a valid absolute URL.');
  }
  if (url.protocol !== 'https:') refuse('not_https', 'url must use https.');
  if (url.username || url.password) refuse('invalid_url', 'url must not carry credentials.');
  if (!url.hostname) refuse('invalid_url', 'url has no host.');
  return url;
}

/** How a name is resolved: every address, in the resolver's order (node:dns `lookup` with `all`). */
export type Resolve = (host: string) => Promise<Array<{ address: string; family: number }>>;

const systemResolve: Resolve = (host) => lookup(host, { all: true, verbatim: true });

/**
 * How long an answer of the resolver is used again for the same name (ms). An attempt may
 * already go on a read of its endpoint this old (a claim made ahead, CLAIM_AHEAD_FRESH_MS in the
 * delivery engine), and the resolver's answer is part of the same picture: within this window a
 * steady stream of attempts to one receiver pays no lookup (a trip through libuv's thread pool,
 * measured at 3-5 ms of each attempt's time on a loaded 2-core machine, while the attempt holds
 * its account's in-flight slot). The guard's promise holds all the same: every connection goes
 * to an address vetted on an answer at most this old, and a name that rebinds to a private
 * address is refused once its new answer is read.
 */
export const RESOLUTION_REUSE_MS = 250;
/** Names remembered per resolver at most (the oldest are dropped first). */
const RESOLUTIONS_REMEMBERED = 10_000;

type Addresses = Array<{ address: string; family: number }>;

/** A lookup of one name: its answer, and when it came (null while the lookup is under way). */
type ResolutionEntry = { answer: Promise<Addresses>; at: number | null };

/**
 * Per resolver, by name: the lookup under way (attempts that vet the same name at the same
 * moment share ONE lookup) or its answer and when it came (used again for RESOLUTION_REUSE_MS).
 * A failed lookup (an error or no address) is not kept.
 */
const resolutions = new WeakMap<Resolve, Map<string, ResolutionEntry>>();

/**
 * How long a caller waits for the resolver's answer (ms); past it the name counts as not
 * resolving (`unresolvable`) and an attempt is failed and retried on the schedule. getaddrinfo has
 * no timeout of its own (the system resolver's retries can take 10-30 s), and an attempt's claim
 * and its account's in-flight slot last the receiver's answer time plus CLAIM_MARGIN_MS (5 s) for
 * DNS, TLS and recording: a lookup slower than that would let the claim lapse while the attempt
 * still runs. The lookup itself is not cancelled (libuv cannot): it stays the one shared lookup
 * of that name until it settles, so a hanging name holds one resolver thread, never more.
 */
export const RESOLVE_TIMEOUT_MS = 2_000;

/** The name's answer: one already in (used again, no wait), or the lookup under way, awaited RESOLVE_TIMEOUT_MS at most. */
function resolveShared(resolve: Resolve, host: string): Promise<Addresses> {
  let known = resolutions.get(resolve);
  if (!known) resolutions.set(resolve, (known = new Map()));
  let entry = known.get(host);
  // A monotonic clock: a wall clock stepped back would stretch the window.
  if (entry && entry.at !== null && performance.now() - entry.at <= RESOLUTION_REUSE_MS) return entry.answer;
  if (!entry || entry.at !== null) entry = startLookup(known, resolve, host);
  return withTimeout(entry.answer, RESOLVE_TIMEOUT_MS, `the resolver for ${host}`);
}

/** A new lookup of `host`, remembered as the one under way; its answer is kept once it comes, a failure is forgotten. */
function startLookup(known: Map<string, ResolutionEntry>, resolve: Resolve, host: string): ResolutionEntry {
  const entry: ResolutionEntry = { answer: resolve(host), at: null };
  known.delete(host);
  known.set(host, entry);
  if (known.size > RESOLUTIONS_REMEMBERED) known.delete(known.keys().next().value!);
  const forget = () => {
    if (known.get(host) === entry) known.delete(host);
  };
  entry.answer.then(
    (addresses) => {
      // An empty answer is a failed lookup (the name does not resolve): not kept either.
      if (addresses.length === 0) forget();
      else entry.at = performance.now();
    },
    forget,
  );
  return entry;
}

export async function vetWebhookUrl(raw: string, opts: { allowedHosts: readonly string[]; resolve?: Resolve }): Promise<VettedUrl> {
  const url = parseWebhookUrl(raw);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  const exempt = opts.allowedHosts.includes(host);
  let addresses: Array<{ address: string; family: number }>;
  // The WHATWG parser has already turned every IPv4 spelling (hex, octal, short forms, a single
  // number) into dotted quads, so node's isIP recognises every literal the URL can hold.
  const literal = isIP(host);
  if (literal !== 0) {
    addresses = [{ address: host, family: literal }];
  } else {
    try {
      addresses = await resolveShared(opts.resolve ?? systemResolve, host);
    } catch {
      return refuse('unresolvable', `The host ${host} does not resolve (no answer, or none within ${RESOLVE_TIMEOUT_MS / 1000} s).`);
    }
    if (addresses.length === 0) refuse('unresolvable', `The host ${host} does not resolve.`);
  }
  if (!exempt && !addresses.every((a) => isPublicAddress(a.address))) {
    refuse('private_address', 'url must resolve only to public addresses (loopback, private, link-local and reserved ranges are refused).');
  }
  const first = addresses[0];
  return { url, address: first.address, family: first.family === 6 ? 6 : 4 };
}
