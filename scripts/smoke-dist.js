/* global console, fetch, setTimeout, clearTimeout */
// Smoke test of the build output (CI, after `npm run build`): runs the compiled API, worker and MCP server
// with plain node, as the Docker image does, on ephemeral ports against DATABASE_URL/REDIS_URL;
// applies the migrations from the build, checks /healthz, /readyz and /metrics; then SIGTERM must exit 0. Exit 1 on any failure.
const { spawn } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const env = {
  PATH: process.env.PATH,
  NODE_ENV: 'production',
  DATABASE_URL: process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/teamchat',
  REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379',
  REDIS_PREFIX: `smoke-${randomBytes(4).toString('hex')}`,
  SECRETS_KEY: randomBytes(32).toString('hex'),
  API_PORT: '0', WEB_PORT: '0', OPS_PORT: '0', WORKER_OPS_PORT: '0', MCP_PORT: '0', MCP_OPS_PORT: '0',
};

function run(entry, readyMessage) {
  const child = spawn(process.execPath, ['--conditions=teamchat-dist', entry], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const ready = new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error(`${entry}: no "${readyMessage}" line in 30 s`)), 30_000);
    child.stdout.on('data', (c) => {
      buf += c;
      for (const text of buf.split('\n').slice(0, -1)) {
        try {
          const line = JSON.parse(text);
          if (line.message === readyMessage) { clearTimeout(timer); resolve(line); }
        } catch { /* not JSON */ }
      }
      buf = buf.slice(buf.lastIndexOf('\n') + 1);
    });
    void exited.then((e) => reject(new Error(`${entry} exited early (${e.signal || e.code})`)));
  });
  return { child, ready, exited };
}

async function expectStatus(url, status, contains) {
  const res = await fetch(url);
  const text = await res.text();
  if (res.status !== status || (contains && !text.includes(contains))) throw new Error(`${url}: ${res.status} ${text.slice(0, 200)}`);
  console.log(`ok  ${res.status} ${url}`);
}

/** Polls a /readyz until it answers 200 (a process is ready once warm: docs/operations.md "Readiness"), as a load balancer would. */
async function waitReady(url) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const res = await fetch(url).catch(() => null);
    const text = res ? await res.text() : '';
    if (res && res.status === 200 && text.includes('"ready"')) return console.log(`ok  200 ${url}`);
    if (Date.now() > deadline) throw new Error(`${url}: not ready in 60 s (${res ? res.status : 'no answer'} ${text.slice(0, 200)})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function migrate() {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--conditions=teamchat-dist', 'packages/db/dist/migrate-cli.js'], { cwd: ROOT, env, stdio: 'inherit' });
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`migrate-cli exited ${code}`))));
  });
}

async function main() {
  await migrate(); // creates the database if missing and applies the migrations, as the image does
  const api = run('apps/api/dist/server.js', 'listening');
  const worker = run('apps/worker/dist/main.js', 'worker started');
  const mcp = run('apps/mcp/dist/server.js', 'listening');
  const all = [api, worker, mcp];
  try {
    const a = await api.ready;
    const w = await worker.ready;
    const m = await mcp.ready;
    await expectStatus(`http://127.0.0.1:${a.api_port}/healthz`, 200, '"ok"');
    await waitReady(`http://127.0.0.1:${a.web_port}/readyz`);
    await waitReady(`http://127.0.0.1:${w.ops_port}/readyz`);
    await waitReady(`http://127.0.0.1:${m.ops_port}/readyz`);
    await expectStatus(`http://127.0.0.1:${a.api_port}/metrics`, 404);
    // The document is generated at run time from the compiled declarations; Redoc comes from node_modules.
    await expectStatus(`http://127.0.0.1:${a.web_port}/openapi.json`, 200, '"openapi":"3.1.1"');
    await expectStatus(`http://127.0.0.1:${a.api_port}/docs/redoc.standalone.js`, 200, 'Redoc');
    await expectStatus(`http://127.0.0.1:${a.ops_port}/metrics`, 200, 'teamchat_http_requests_total');
    await expectStatus(`http://127.0.0.1:${w.ops_port}/metrics`, 200, 'teamchat_queue_jobs');
    await expectStatus(`http://127.0.0.1:${m.ops_port}/metrics`, 200, 'teamchat_limit_degraded_decisions_total{limit="mcp_sessions_per_seat"');
    await expectStatus(`http://127.0.0.1:${m.mcp_port}/mcp`, 401, 'unauthorized'); // no credential: refused before MCP
    for (const p of all) p.child.kill('SIGTERM');
    const exits = await Promise.all(all.map((p) => p.exited));
    if (exits.some((e) => e.code !== 0)) throw new Error(`exit after SIGTERM: ${JSON.stringify(exits)}`);
    console.log('ok  api, worker and mcp exited 0 on SIGTERM');
  } finally {
    for (const p of all) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  }
}

main().catch((err) => {
  console.error(`smoke-dist failed: ${err.message}`);
  process.exit(1);
});
