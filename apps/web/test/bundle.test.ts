import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

/** The initial JavaScript the browser loads before the first page shows: at most 250 KB gzipped (docs/web.md). */
const BUDGET_BYTES = 250 * 1024;
const DIST = path.resolve(__dirname, '../dist');

test('initial JS (the entry script and its modulepreloads) stays within 250 KB gzipped', () => {
  const html = fs.readFileSync(path.join(DIST, 'index.html'), 'utf8');
  const files = [...html.matchAll(/<(?:script[^>]*\bsrc|link[^>]*rel="modulepreload"[^>]*\bhref)="\/([^"]+\.js)"/g)].map((m) => m[1]!);
  expect(files.length).toBeGreaterThan(0);
  const gz = files.reduce((sum, f) => sum + zlib.gzipSync(fs.readFileSync(path.join(DIST, f)), { level: 9 }).length, 0);
  expect(gz).toBeLessThanOrEqual(BUDGET_BYTES);
});
