import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Deps } from '../context';
import { checkReadiness, liveness, type ReadinessNeeds } from './health';
import { drainable } from './shutdown';

export interface OpsServer {
  /** the port actually bound (useful with port 0) */
  port: number;
  close(): Promise<void>;
}

function send(res: http.ServerResponse, status: number, body: string, type = 'application/json'): void {
  res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store' });
  res.end(body);
}

/**
 * The operations server of one process (API, MCP server or worker), on its own port, never a public one:
 * GET /healthz (process up), GET /readyz (warm, PostgreSQL answers, and Redis as the process
 * `needs` it: checkReadiness), GET /metrics (Prometheus). Plain node:http, so the worker needs no
 * web framework.
 */
export async function startOpsServer(
  deps: Pick<Deps, 'database' | 'redis' | 'metrics' | 'logger' | 'warmth'>, port: number, needs: ReadinessNeeds, host = '0.0.0.0',
): Promise<OpsServer> {
  deps.metrics.enableProcessMetrics();
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(res, 405, JSON.stringify({ error: 'method not allowed' }));
      return;
    }
    if (path === '/healthz') {
      send(res, 200, JSON.stringify(liveness()));
    } else if (path === '/readyz') {
      void checkReadiness(deps, needs).then((r) => send(res, r.httpStatus, JSON.stringify(r.body)));
    } else if (path === '/metrics') {
      deps.metrics.registry.metrics().then(
        (text) => send(res, 200, text, deps.metrics.registry.contentType),
        (err: Error) => {
          deps.logger.error('metrics scrape failed', { error: err.message });
          send(res, 500, JSON.stringify({ error: 'metrics unavailable' }));
        },
      );
    } else {
      send(res, 404, JSON.stringify({ error: 'not found' }));
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const drain = drainable(server);
  return { port: (server.address() as AddressInfo).port, close: () => drain.close() };
}
