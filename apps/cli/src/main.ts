import Joi from 'joi';
import { AppError } from '@teamchat/core';
import { createDatabase, ensureDatabase, runMigrations } from '@teamchat/db';
import { parseArgs } from './args';
import { COMMANDS } from './commands';

/** Exit codes: 0 done, 1 the service failed (database unreachable...), 2 bad arguments (nothing written). */
const EXIT_BAD_ARGS = 2;

const configSchema = Joi.object({
  NODE_ENV: Joi.string().valid('development', 'production', 'test').default('development'),
  DATABASE_URL: Joi.string().uri({ scheme: ['postgres', 'postgresql'] }).default('postgres://postgres@127.0.0.1:5432/teamchat'),
}).unknown(true);

function help(): string {
  return [
    'usage: npm run -s admin -- <command> [options] [--json]',
    '',
    ...Object.entries(COMMANDS).map(([name, c]) => `  ${name} ${c.usage}\n      ${c.summary}`),
  ].join('\n');
}

function fail(json: boolean, code: number, errCode: string, message: string): never {
  process.stderr.write(`error: ${message}\n`);
  if (json) process.stdout.write(`${JSON.stringify({ ok: false, error: { code: errCode, message } })}\n`);
  process.exit(code);
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const name = argv[0];
  const command = name ? COMMANDS[name] : undefined;
  const parsed = parseArgs(argv, new Set(command?.switches ?? []));
  if (!name || name === 'help' || name === '--help') {
    process.stdout.write(`${help()}\n`);
    return;
  }
  if (!command) fail(parsed.json, EXIT_BAD_ARGS, 'invalid_request', `unknown command "${name}"\n\n${help()}`);
  if (parsed.errors.length) fail(parsed.json, EXIT_BAD_ARGS, 'invalid_request', `${parsed.errors.join('; ')}\nusage: ${name} ${command.usage}`);
  const { value, error } = command.options.validate(parsed.options, { abortEarly: false, errors: { wrap: { label: false } } });
  if (error) {
    const message = error.details.map((d) => (d.context?.key ? d.message.replace(d.context.key, `--${d.context.key}`) : d.message)).join('; ');
    fail(parsed.json, EXIT_BAD_ARGS, 'invalid_request', `${message}\nusage: ${name} ${command.usage}`);
  }

  const env = configSchema.validate(process.env);
  if (env.error) fail(parsed.json, 1, 'internal', env.error.message);
  if (command.developmentOnly && env.value.NODE_ENV === 'production') {
    fail(parsed.json, EXIT_BAD_ARGS, 'forbidden', `${name} is for local development: it is refused when NODE_ENV=production.`);
  }
  const url: string = env.value.DATABASE_URL;
  const io = { json: parsed.json, out: (l: string) => process.stdout.write(`${l}\n`), err: (l: string) => process.stderr.write(`${l}\n`) };
  if (command.manage) {
    try {
      const out = await command.manage(url, value, io);
      process.stdout.write(parsed.json ? `${JSON.stringify(out)}\n` : `${JSON.stringify(out, null, 2)}\n`);
    } catch (err) {
      if (err instanceof AppError && err.status < 500) fail(parsed.json, EXIT_BAD_ARGS, err.code, err.message);
      fail(parsed.json, 1, 'internal', (err as Error).message);
    }
    return;
  }
  try {
    await ensureDatabase(url);
    await runMigrations(url);
  } catch (err) {
    fail(parsed.json, 1, 'internal', `cannot reach PostgreSQL at ${new URL(url).host}: ${(err as Error).message}`);
  }
  const database = createDatabase(url, { max: 2, application_name: 'cli' });
  try {
    if (command.serve) {
      await command.serve(database.db, value, io);
      return;
    }
    const out = await command.run!(database.db, value);
    process.stdout.write(parsed.json ? `${JSON.stringify(out)}\n` : `${JSON.stringify(out, null, 2)}\n`);
  } catch (err) {
    if (err instanceof AppError && err.status < 500) fail(parsed.json, EXIT_BAD_ARGS, err.code, err.message);
    fail(parsed.json, 1, 'internal', (err as Error).message);
  } finally {
    await database.close();
  }
}

void main();
