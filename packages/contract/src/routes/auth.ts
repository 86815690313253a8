import { route } from '../route';
import { signInBody } from '../schemas/requests';
import { okView, signInView } from '../schemas/views';

/** The web app's own sign-in (spec: Authentication 12), web host only. */
export const authRoutes = [
  route({
    id: 'signIn', method: 'POST', path: '/auth/sign-in', hosts: ['web'], tag: 'Sign-in', access: 'public', idempotent: false,
    summary: 'Sign in: starts a web session',
    description: 'Sets the `tc_session` cookie (HttpOnly, SameSite=Lax) and answers the session token and the CSRF token. '
      + 'Repeated failures for one email are throttled (429 `rate_limited`, scope `sign_in`).',
    request: { body: signInBody },
    responses: { 200: { description: 'Signed in.', body: signInView, headers: ['Set-Cookie'] } },
    errors: { unauthorized: [], rate_limited: [] },
  }),
  route({
    id: 'signOut', method: 'POST', path: '/auth/sign-out', hosts: ['web'], tag: 'Sign-in', access: 'web_session', idempotent: true,
    summary: 'Sign out: ends the web session on the server',
    responses: { 200: { description: 'Signed out; the cookie is cleared.', body: okView, headers: ['Set-Cookie'] } },
  }),
] as const;
