import { AppError, clientAddressKey, reserveSignIn, signIn, signOut, type SignInOutcome } from '@teamchat/core';
import { SESSION_COOKIE } from '../http/authenticate';
import { depsOf, locals } from '../http/locals';
import type { HandlerMap } from './handlers';

/** Web host only: sign-in sets the session cookie; sign-out ends the session on the server. */
export const authHandlers = {
  signIn: async (req, res) => {
    const deps = depsOf(req);
    const { email, password } = locals(res).valid.body;
    const log = locals(res).log;
    // Rules: docs/api.md "Hosts and sessions", sign-in throttling. The attempt is counted first
    // (one Redis script, refused when the email or the address is used up), then it takes a
    // hashing slot of this process or is refused at once (it stays counted), then the password.
    const address = req.ip;
    const reservation = await reserveSignIn(deps.redis, deps.config, { email, address }, log);
    const leave = deps.passwordHashing.enter(clientAddressKey(address));
    let result;
    let outcome: SignInOutcome = 'not_checked';
    try {
      result = await signIn(deps.database.db, { email, password, ttlHours: deps.config.sessionTtlHours, now: deps.now(), requestId: locals(res).requestId });
      outcome = 'succeeded';
    } catch (err) {
      if (err instanceof AppError && err.code === 'unauthorized') outcome = 'failed';
      throw err;
    } finally {
      leave();
      await reservation.settle(outcome);
    }
    res.cookie(SESSION_COOKIE, result.token, {
      httpOnly: true,
      sameSite: 'lax',
      secure: deps.config.publicWebUrl.startsWith('https:'),
      expires: result.expiresAt,
      path: '/',
    });
    res.status(200).json(result.body);
  },

  signOut: async (req, res) => {
    await signOut(depsOf(req).database.db, locals(res).principal!.id);
    res.clearCookie(SESSION_COOKIE, { path: '/' });
    res.status(200).json({ ok: true });
  },
} satisfies HandlerMap;
