import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * The web app's build (apps/web/dist), made when it is missing or older than any of its sources,
 * so `npm start` and the browser tests always serve the current app (`vite build` in apps/web).
 */
const WEB = path.resolve(__dirname, '..', 'apps', 'web');
const SOURCES = ['src', 'public', 'index.html', 'vite.config.mts', 'package.json'];

function newest(p: string): number {
  if (!fs.existsSync(p)) return 0;
  const st = fs.statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  return fs.readdirSync(p).reduce((m, name) => Math.max(m, newest(path.join(p, name))), st.mtimeMs);
}

export function webBuildIsCurrent(): boolean {
  const index = path.join(WEB, 'dist', 'index.html');
  if (!fs.existsSync(index)) return false;
  const built = fs.statSync(index).mtimeMs;
  return SOURCES.every((s) => newest(path.join(WEB, s)) <= built);
}

/** Builds the app if needed; returns whether it built. */
export function ensureWebBuild(log: (line: string) => void = () => undefined): boolean {
  if (webBuildIsCurrent()) return false;
  log('building the web app (apps/web → apps/web/dist)…');
  execFileSync('npm', ['run', '-s', 'build', '-w', '@teamchat/web', '--', '--logLevel', 'warn'], {
    cwd: path.resolve(WEB, '..', '..'),
    stdio: 'inherit',
    // Always the production build: Jest sets NODE_ENV=test, which would make Vite bundle React's development build.
    env: { ...process.env, NODE_ENV: 'production' },
  });
  return true;
}
