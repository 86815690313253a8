export * from './notify-admins';
export * from './messages';
export { mailTransport, SMTP_TIMEOUT_MS } from './mailer';
