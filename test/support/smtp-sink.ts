import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** One email as the sink received it: its envelope's recipients and its raw message. */
export interface Mail { to: string[]; raw: string }

/** A real SMTP server on loopback that keeps every email it receives (the service's SMTP_URL points at it). */
export interface SmtpSink {
  /** every email received so far, oldest first */
  inbox: Mail[];
  /** SMTP_URL and SMTP_FROM for a harness: `{ ...sink.config }` */
  config: { smtpUrl: string; smtpFrom: string };
  close(): Promise<void>;
}

export async function startSmtpSink(): Promise<SmtpSink> {
  const inbox: Mail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      let raw = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => { raw += chunk; });
      stream.on('end', () => {
        inbox.push({ to: session.envelope.rcptTo.map((r) => r.address), raw });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    inbox,
    config: { smtpUrl: `smtp://127.0.0.1:${port}`, smtpFrom: 'teamchat <no-reply@teamchat.test>' },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
