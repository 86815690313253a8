import { hostileSuite } from './fuzz';

// docs/api.md 'Hostile input': hostile input on every route of the web host answers 2xx or 4xx with the
// spec's error body, never a 5xx or a stack trace (property-based, fast-check, fixed seed).
describe('hostile input on the web host never answers 5xx', () => {
  hostileSuite('web');
});
