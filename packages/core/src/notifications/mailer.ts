import nodemailer, { type Transporter } from 'nodemailer';
import type { Config } from '../config';

/**
 * One nodemailer transport per SMTP URL per process (created on first use, kept for the life of
 * the process). Timeouts bound how long a dead or silent SMTP server can hold a sender.
 */
const transports = new Map<string, Transporter>();

/** Connection, greeting and socket timeouts of the SMTP transport, in ms. */
export const SMTP_TIMEOUT_MS = 10_000;

export function mailTransport(config: Pick<Config, 'smtpUrl'>): Transporter | null {
  if (!config.smtpUrl) return null;
  let transport = transports.get(config.smtpUrl);
  if (!transport) {
    transport = nodemailer.createTransport(config.smtpUrl, {
      connectionTimeout: SMTP_TIMEOUT_MS,
      greetingTimeout: SMTP_TIMEOUT_MS,
      socketTimeout: SMTP_TIMEOUT_MS,
    } as never);
    transports.set(config.smtpUrl, transport);
  }
  return transport;
}
