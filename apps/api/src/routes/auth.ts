import { Router, type Request, type Response } from 'express';
import Joi from 'joi';
import { AppError, PASSWORD_MAX, assertSignInAllowed, clearSignInFailures, recordSignInFailure, signIn, signOut } from '@teamchat/core';
import { SESSION_COOKIE, authenticateWebHost } from '../http/authenticate';
import { depsOf, locals } from '../http/locals';
import { validate } from '../http/validate';

/** Web host only: sign-in sets the session cookie; sign-out ends the session on the server. */
export function authRouter(): Router {
  const router = Router();

  router.post(
    '/auth/sign-in',
    validate({ body: { email: Joi.string().email({ tlds: false }).max(320).required(), password: Joi.string().max(PASSWORD_MAX).required() } }),
    async (req: Request, res: Response) => {
      const deps = depsOf(req);
      const { email, password } = locals(res).valid.body;
      const prefix = deps.config.redisPrefix;
      const log = locals(res).log;
      await assertSignInAllowed(deps.redis, prefix, email, log);
      let result;
      try {
        result = await deps.database.db.transaction((tx) =>
          signIn(tx, { email, password, ttlHours: deps.config.sessionTtlHours, now: deps.now(), requestId: locals(res).requestId }),
        );
      } catch (err) {
        if (err instanceof AppError && err.code === 'unauthorized') await recordSignInFailure(deps.redis, prefix, email, log);
        throw err;
      }
      await clearSignInFailures(deps.redis, prefix, email, log);
      res.cookie(SESSION_COOKIE, result.token, {
        httpOnly: true,
        sameSite: 'lax',
        secure: deps.config.publicWebUrl.startsWith('https:'),
        expires: result.expiresAt,
        path: '/',
      });
      res.status(200).json(result.body);
    },
  );

  router.post('/auth/sign-out', authenticateWebHost, async (req: Request, res: Response) => {
    await signOut(depsOf(req).database.db, locals(res).principal!.id);
    res.clearCookie(SESSION_COOKIE, { path: '/' });
    res.status(200).json({ ok: true });
  });

  return router;
}
