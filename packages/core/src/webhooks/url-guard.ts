import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { errors } from '../errors';
import { memoBounded } from '../bounded-memo';

/**
 * The webhook URL guard, run at registration, on every URL change, and again before every
 * attempt: `https` only; the name is resolved and EVERY address it resolves to must be a public
 * unicast address (a name that also resolves to a private address is refused: DNS rebinding);
 * the caller then connects to the vetted `address`, never resolving the name a second time.
 *
 * Ranges come from ipaddr.js's own range tables: loopback, private, link-local (the cloud
 * metadata address 169.254.169.254 among them), CGNAT, multicast, broadcast, reserved,
 * unspecified, IPv6 unique-local; IPv4-mapped and NAT64 (rfc6052/rfc6145) addresses are judged by
 * the IPv4 address they embed; 6to4 and Teredo tunnels are refused whole.
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

/** Unicast ranges ipaddr.js files under `unicast` that are still not the public internet. */
const EXTRA_BLOCKED: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]> = [
  ipaddr.parseCIDR('198.18.0.0/15'), // benchmarking (RFC 2544)
  ipaddr.parseCIDR('100::/64'), // discard-only (RFC 6666)
];

function refuse(reason: UrlRefusal, message: string): never {
  throw errors.invalid(message, { field: 'url', reason });
}

/**
 * What an address literal is never changes: the verdicts of the addresses seen lately are kept
 * (the guard runs before every attempt, and parsing and matching the ranges was ~2.5 % of a
 * worker's CPU). Only the verdict on the literal is kept; names are resolved every time.
 */
const verdicts = new Map<string, boolean>();
const VERDICTS_MAX = 10_000;

/** Whether an address is a public unicast address a webhook may be sent to. */
export function isPublicAddress(text: string): boolean {
  return memoBounded(verdicts, VERDICTS_MAX, text, judgeAddress);
}

function judgeAddress(text: string): boolean {
  if (!ipaddr.isValid(text)) return false;
  let addr = ipaddr.parse(text);
  if (addr.kind() === 'ipv6') {
    const v6 = addr as ipaddr.IPv6;
    const range = v6.range();
    if (range === 'ipv4Mapped') addr = v6.toIPv4Address();
    else if (range === 'rfc6052' || range === 'rfc6145') addr = ipaddr.fromByteArray(v6.toByteArray().slice(12));
  }
  if (addr.range() !== 'unicast') return false;
  return !EXTRA_BLOCKED.some(([net, bits]) => net.kind() === addr.kind() && addr.match(net, bits));
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
 * Resolutions under way, by resolver and name: attempts that vet the same name at the same moment
 * (a batch round sends to many endpoints of one receiver host at once) share ONE lookup. Nothing
 * is kept once it answers: the next attempt resolves the name again (a rebinding name is judged
 * on its newest answer), so this saves lookups without ever vetting an older answer.
 */
const resolving = new WeakMap<Resolve, Map<string, Promise<Array<{ address: string; family: number }>>>>();

function resolveShared(resolve: Resolve, host: string): Promise<Array<{ address: string; family: number }>> {
  let pending = resolving.get(resolve);
  if (!pending) {
    pending = new Map();
    resolving.set(resolve, pending);
  }
  const inFlight = pending.get(host);
  if (inFlight) return inFlight;
  const p = resolve(host).finally(() => pending.delete(host));
  pending.set(host, p);
  return p;
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
      return refuse('unresolvable', `The host ${host} does not resolve.`);
    }
    if (addresses.length === 0) refuse('unresolvable', `The host ${host} does not resolve.`);
  }
  if (!exempt && !addresses.every((a) => isPublicAddress(a.address))) {
    refuse('private_address', 'url must resolve only to public addresses (loopback, private, link-local and reserved ranges are refused).');
  }
  const first = addresses[0];
  return { url, address: first.address, family: first.family === 6 ? 6 : 4 };
}
