import { ensureDatabase, runMigrations } from './migrate';

// Migrations hold a session-level advisory lock: behind PgBouncer in transaction mode they run on
// the direct connection (DATABASE_DIRECT_URL) when one is given.
const url = process.env.DATABASE_DIRECT_URL || process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/teamchat';

ensureDatabase(url)
  .then(() => runMigrations(url, (id, ms) => console.log(`online step ${id} done in ${ms} ms`)))
  .then(() => console.log('migrations applied'))
  .catch((err: Error) => {
    console.error(`migration failed: ${err.message}`);
    process.exit(1);
  });
