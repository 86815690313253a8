import { ROUTE_ROWS, mountedRoutes, rowsFor, type Host } from './routes';
import { startHarness, type Harness } from '../../../../test/support/harness';

// The hostile-input properties cover EVERY route: the rows come from the route declarations,
// and this fails when a host mounts a route the declarations do not list, or the reverse.

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

describe('the route table (from the declarations) matches the mounted routes', () => {
  test.each(['api', 'web'] as Host[])('%s host', (host) => {
    const mounted = mountedRoutes(host === 'api' ? h.api : h.web);
    const listed = rowsFor(host).map((r) => `${r.method} ${r.path}`).sort();
    expect(mounted.length).toBeGreaterThan(20);
    expect({ missingFromTable: mounted.filter((r) => !listed.includes(r)), notMounted: listed.filter((r) => !mounted.includes(r)) })
      .toEqual({ missingFromTable: [], notMounted: [] });
  });

  test('no row is listed twice', () => {
    const keys = ROUTE_ROWS.map((r) => `${r.method} ${r.path} ${r.hosts.join(',')}`);
    expect(new Set(keys).size).toBe(keys.length);
  });
});
