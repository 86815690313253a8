import { ROUTES, mountedRoutes, rowsFor, type Host } from './routes';
import { startHarness, type Harness } from '../../../../test/support/harness';

// docs/api.md 'Hostile input': the hostile-input properties cover EVERY route. This fails when a route is
// mounted on a host but missing from ROUTES (add a row), or listed but no longer mounted.

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

describe('the hostile-input route table matches the mounted routes', () => {
  test.each(['api', 'web'] as Host[])('%s host', (host) => {
    const mounted = mountedRoutes(host === 'api' ? h.api : h.web);
    const listed = rowsFor(host).map((r) => `${r.method} ${r.path}`).sort();
    expect(mounted.length).toBeGreaterThan(20);
    expect({ missingFromTable: mounted.filter((r) => !listed.includes(r)), notMounted: listed.filter((r) => !mounted.includes(r)) })
      .toEqual({ missingFromTable: [], notMounted: [] });
  });

  test('no row is listed twice', () => {
    const keys = ROUTES.map((r) => `${r.method} ${r.path} ${(r.hosts ?? []).join(',')}`);
    expect(new Set(keys).size).toBe(keys.length);
  });
});
