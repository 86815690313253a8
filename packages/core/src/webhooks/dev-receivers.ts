import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config';
import { ID_PREFIXES } from '../ids';

/**
 * Development receivers: what lets `webhooks:listen` (apps/cli, README "Operator CLI") deliver to
 * a local HTTPS receiver with a throwaway CA, with no restart of the API or the worker and no
 * change to the URL guard's rules for anyone else (docs/webhooks.md, "Local development").
 *
 * The command writes one file per endpoint, `<dir>/<endpoint id>.json`, holding the endpoint id,
 * its account, its exact URL and the receiver's CA certificate (PEM), in the transaction that
 * registers the endpoint (so no attempt can see the endpoint before its file), and removes it with
 * the endpoint. At every attempt the sender looks for the file of the endpoint it sends to:
 * - only when `dir` is configured: never in production (config refuses WEBHOOK_DEV_RECEIVERS_DIR
 *   there and leaves it unset), so a production process can never honour one;
 * - only for a URL whose host is the loopback address literal 127.0.0.1 or [::1]: the allowance
 *   exempts that address from the private-address rule, never another range, never `https`;
 * - only when the file names this endpoint, its account and its exact current URL: a URL changed
 *   through the API is vetted as usual (and refused), and no API call writes these files.
 * The CA is then trusted for that endpoint's connections only.
 */
export interface DevReceiver {
  /** the loopback literal the URL names, exempted for this endpoint only */
  host: string;
  /** PEM of the CA trusted for this endpoint's TLS */
  ca: string;
}

export interface DevReceiverFile {
  endpoint_id: string;
  account_id: string;
  url: string;
  ca: string;
}

const LOOPBACK_LITERALS = new Set(['127.0.0.1', '::1']);
const ENDPOINT_ID = new RegExp(`^${ID_PREFIXES.webhook}_[a-z0-9]+$`);

function fileOf(dir: string, endpointId: string): string | null {
  return ENDPOINT_ID.test(endpointId) ? path.join(dir, `${endpointId}.json`) : null;
}

/** The development allowance of this endpoint, or null (the usual rules apply). */
export function devReceiverFor(
  config: Pick<Config, 'webhookDevReceiversDir'>,
  endpoint: { id: string; accountId: string; url: string },
): DevReceiver | null {
  const dir = config.webhookDevReceiversDir;
  if (!dir) return null;
  let url: URL;
  try {
    url = new URL(endpoint.url);
  } catch {
    return null;
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (url.protocol !== 'https:' || !LOOPBACK_LITERALS.has(host)) return null;
  const file = fileOf(dir, endpoint.id);
  if (!file) return null;
  let entry: Partial<DevReceiverFile>;
  try {
    entry = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<DevReceiverFile>;
  } catch {
    return null; // no file (the usual case), or a half-written one
  }
  if (entry.endpoint_id !== endpoint.id || entry.account_id !== endpoint.accountId || entry.url !== endpoint.url) return null;
  if (typeof entry.ca !== 'string' || !entry.ca.includes('BEGIN CERTIFICATE')) return null;
  return { host, ca: entry.ca };
}

/** Writes an endpoint's allowance (the `webhooks:listen` command, inside the registering transaction). */
export function writeDevReceiver(config: Pick<Config, 'webhookDevReceiversDir'>, entry: DevReceiverFile): string {
  const dir = config.webhookDevReceiversDir;
  if (!dir) throw new Error('development receivers are off (NODE_ENV=production, or no WEBHOOK_DEV_RECEIVERS_DIR)');
  const file = fileOf(dir, entry.endpoint_id);
  if (!file) throw new Error(`not an endpoint id: ${entry.endpoint_id}`);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(entry), { mode: 0o600 });
  fs.renameSync(tmp, file); // whole or absent, never half-written
  return file;
}

export function removeDevReceiver(config: Pick<Config, 'webhookDevReceiversDir'>, endpointId: string): void {
  const dir = config.webhookDevReceiversDir;
  const file = dir ? fileOf(dir, endpointId) : null;
  if (file) fs.rmSync(file, { force: true });
}
