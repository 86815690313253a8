import { hostileSuite } from './fuzz';

// docs/api.md 'Hostile input': hostile input on every route of the api host answers 2xx or 4xx with the
// spec's error body, never a 5xx or a stack trace (property-based, fast-check, fixed seed).
describe('hostile input on the api host never answers 5xx', () => {
  hostileSuite('api');
});
