import { hostileSuite } from './fuzz';

// Issue 7 item 5: hostile input on every route of the api host answers 2xx or 4xx with the
// spec's error body, never a 5xx or a stack trace (property-based, fast-check, fixed seed).
describe('Issue 7 item 5: hostile input on the api host', () => {
  hostileSuite('api');
});
