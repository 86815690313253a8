import { ensureDatabase, runMigrations } from './migrate';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/teamchat';

ensureDatabase(url)
  .then(() => runMigrations(url))
  .then(() => console.log('migrations applied'))
  .catch((err: Error) => {
    console.error(`migration failed: ${err.message}`);
    process.exit(1);
  });
