import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMetrics, loadConfig } from '@teamchat/core';

/**
 * The Docker files, Prometheus config and Grafana dashboard are checked without
 * a Docker engine: they parse, point at the operations ports, and the dashboard only names
 * metrics that exist. js-yaml is not a declared dependency of ours: it is in node_modules through
 * Jest (ts-jest → babel-plugin-istanbul); version 3's API (safeLoad).
 */
const yaml: { safeLoad(text: string): any } = require('js-yaml');

const ROOT = path.resolve(__dirname, '..');
const read = (p: string) => fs.readFileSync(path.join(ROOT, p), 'utf8');
const DEFAULTS = loadConfig({ SECRETS_KEY: 'ab'.repeat(32) });

function registryNames(): Set<string> {
  const m = createMetrics();
  m.enableProcessMetrics();
  return new Set(m.registry.getMetricsAsArray().map((x) => x.name));
}

describe('Grafana dashboard (docker/grafana/dashboards/teamchat.json)', () => {
  const dashboard = JSON.parse(read('docker/grafana/dashboards/teamchat.json'));
  const exprs: string[] = dashboard.panels.flatMap((p: any) => p.targets.map((t: any) => t.expr));
  const used = new Set(
    exprs.flatMap((e) => [...e.matchAll(/\b((?:teamchat|process|nodejs)_[a-z0-9_]+)/g)].map((m) => m[1].replace(/_(bucket|count|sum)$/, ''))),
  );

  test('every metric a panel queries exists in the registry', () => {
    const names = registryNames();
    expect(used.size).toBeGreaterThan(10);
    for (const name of used) expect(names).toContain(name);
  });

  test('every teamchat_ metric has a panel, and panels use the provisioned data source', () => {
    for (const name of [...registryNames()].filter((n) => n.startsWith('teamchat_'))) expect(used).toContain(name);
    const ds = yaml.safeLoad(read('docker/grafana/provisioning/datasources/prometheus.yml'));
    const uid = ds.datasources[0].uid;
    for (const p of dashboard.panels) expect(p.datasource.uid).toBe(uid);
    expect(new Set(dashboard.panels.map((p: any) => p.id)).size).toBe(dashboard.panels.length);
  });

  test('the dashboards provider reads the folder compose mounts', () => {
    const provider = yaml.safeLoad(read('docker/grafana/provisioning/dashboards/teamchat.yml'));
    const compose = yaml.safeLoad(read('docker/compose.yml'));
    const mount = compose.services.grafana.volumes.find((v: string) => v.startsWith('./grafana/dashboards:'));
    expect(mount.split(':')[1]).toBe(provider.providers[0].options.path);
  });
});

describe('Prometheus (docker/prometheus.yml) scrapes the operations ports, never the public ones', () => {
  const prom = yaml.safeLoad(read('docker/prometheus.yml'));
  test('API on OPS_PORT, workers on WORKER_OPS_PORT, the MCP server on MCP_OPS_PORT, at /metrics', () => {
    const byJob = Object.fromEntries(prom.scrape_configs.map((c: any) => [c.job_name, c]));
    expect(byJob['teamchat-api'].dns_sd_configs[0]).toMatchObject({ names: ['api'], port: DEFAULTS.opsPort });
    expect(byJob['teamchat-worker'].dns_sd_configs[0]).toMatchObject({ names: ['worker'], port: DEFAULTS.workerOpsPort });
    expect(byJob['teamchat-mcp'].dns_sd_configs[0]).toMatchObject({ names: ['mcp'], port: DEFAULTS.mcpOpsPort });
    for (const c of prom.scrape_configs) expect(c.metrics_path).toBe('/metrics');
    expect(read('docker/prometheus.yml')).not.toMatch(/\b300[01]\b/);
  });
});

describe('compose (docker/compose.yml) and the image run compiled JavaScript', () => {
  const compose = yaml.safeLoad(read('docker/compose.yml'));
  const s = compose.services;

  test('api and worker run node on dist/, not tsx; the image CMD too', () => {
    expect(s.api.command.join(' ')).toMatch(/node apps\/api\/dist\/server\.js/);
    expect(s.worker.command).toEqual(['node', 'apps/worker/dist/main.js']);
    expect(JSON.stringify([s.api.command, s.worker.command])).not.toContain('tsx');
    const dockerfile = read('docker/Dockerfile');
    expect(dockerfile).toContain('CMD ["node", "apps/api/dist/server.js"]');
    expect(dockerfile).toContain('npm run -s build');
    expect(dockerfile).toContain('NODE_OPTIONS=--conditions=teamchat-dist');
  });

  test('only the public ports are published; the ops port is configured; shutdown has time to drain', () => {
    expect(s.api.ports).toEqual(['3000:3000', '3001:3001']);
    expect(s.mcp.ports).toEqual(['3002:3002']);
    expect(s.worker.ports).toBeUndefined();
    expect(s.api.environment.OPS_PORT).toBe(String(DEFAULTS.opsPort));
    expect(s.api.environment.WORKER_OPS_PORT).toBe(String(DEFAULTS.workerOpsPort));
    expect(s.mcp.environment.MCP_OPS_PORT).toBe(String(DEFAULTS.mcpOpsPort));
    for (const name of ['api', 'mcp', 'worker']) {
      expect(parseInt(s[name].stop_grace_period, 10) * 1000).toBeGreaterThan(DEFAULTS.shutdownTimeoutMs);
      expect(s[name].healthcheck.test.join(' ')).toContain('/readyz');
    }
    expect(s.mcp.healthcheck.test.join(' ')).toContain(`:${DEFAULTS.mcpOpsPort}/readyz`);
  });

  test('Redis never evicts (BullMQ) and persists; monitoring is a profile with its files present', () => {
    expect(s.redis.command).toEqual(expect.arrayContaining(['--maxmemory-policy', 'noeviction', '--appendonly', 'yes']));
    for (const name of ['prometheus', 'grafana']) expect(s[name].profiles).toEqual(['monitoring']);
    for (const name of ['postgres', 'redis', 'api', 'worker']) expect(s[name].profiles).toBeUndefined();
    const mounts: string[] = [...s.prometheus.volumes, ...s.grafana.volumes].filter((v: string) => v.startsWith('./'));
    for (const m of mounts) expect(fs.existsSync(path.join(ROOT, 'docker', m.split(':')[0]))).toBe(true);
  });
});

describe('module resolution of the build output (package exports)', () => {
  /**
   * The workspaces' real package.json files in a scratch node_modules with empty src/ and dist/
   * entry files, so the exports map is checked without a build.
   */
  function resolveIn(conditions: string[]): string[] {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'teamchat-exports-'));
    try {
      for (const pkg of ['core', 'db']) {
        const at = path.join(dir, 'node_modules/@teamchat', pkg);
        for (const f of ['src/index.ts', 'dist/index.js']) {
          fs.mkdirSync(path.dirname(path.join(at, f)), { recursive: true });
          fs.writeFileSync(path.join(at, f), '');
        }
        fs.copyFileSync(path.join(ROOT, 'packages', pkg, 'package.json'), path.join(at, 'package.json'));
      }
      const out = execFileSync(process.execPath, [...conditions, '-p', "[require.resolve('@teamchat/core'), require.resolve('@teamchat/db')].join(' ')"], { cwd: dir });
      return out.toString().trim().split(' ').map((p) => path.relative(dir, p));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  test('with --conditions=teamchat-dist the workspaces resolve to dist/; without it to src/ (npm start, Jest, tsx)', () => {
    expect(resolveIn(['--conditions=teamchat-dist'])).toEqual([
      path.join('node_modules/@teamchat/core/dist/index.js'),
      path.join('node_modules/@teamchat/db/dist/index.js'),
    ]);
    expect(resolveIn([])).toEqual([path.join('node_modules/@teamchat/core/src/index.ts'), path.join('node_modules/@teamchat/db/src/index.ts')]);
  });

  test('every workspace the image copies has a build config emitting to its dist/', () => {
    const root = JSON.parse(read('tsconfig.build.json'));
    const built = root.references.map((r: { path: string }) => path.dirname(r.path)).sort();
    // apps/web is built by Vite (static files), not tsc; it has its own test below.
    const copied = [...read('docker/Dockerfile').matchAll(/COPY --from=build \/app\/(\S+)\/dist /g)].map((m) => m[1]).filter((w) => w !== 'apps/web').sort();
    expect(copied).toEqual(built);
  });

  test('the image builds the web app and ships its static files where the web host serves them from', () => {
    const dockerfile = read('docker/Dockerfile');
    expect(dockerfile).toContain('npm run -s build -w @teamchat/web');
    expect(dockerfile).toContain('COPY --from=build /app/apps/web/dist apps/web/dist');
  });
});
