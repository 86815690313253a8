import { stopDevServices } from '../../scripts/dev-services';
import { dropDatabase } from './databases';
import { started } from './global-setup';

/** Drops this run's database, then stops what global setup started (embedded PostgreSQL, redis-server). */
export default async function globalTeardown(): Promise<void> {
  const url = process.env.TEST_DATABASE_URL;
  if (url) await dropDatabase(new URL(url).pathname.slice(1));
  await stopDevServices(started.services);
}
