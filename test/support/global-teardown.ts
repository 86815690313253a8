import { dropDatabase } from './databases';

/** Drops this run's database. */
export default async function globalTeardown(): Promise<void> {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) return;
  await dropDatabase(new URL(url).pathname.slice(1));
}
