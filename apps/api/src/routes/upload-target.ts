import { Router } from 'express';
import Joi from 'joi';
import { acceptUpload, fileIdSchema, fileStoreFor } from '@teamchat/core';
import { depsOf, locals } from '../http/locals';
import { validate } from '../http/validate';

/**
 * The local driver's upload URL, on the web host (docs/api.md "Files"): `PUT /uploads/{fileId}
 * ?expires=…&signature=…` with exactly the reserved number of bytes. The signed URL is the only
 * permission (no cookie, no credential, so it works from `fetch` as an S3 presigned URL does);
 * mounted before the JSON body parser and authentication, so the body streams to storage as sent.
 */
export function uploadTargetRouter(): Router {
  const router = Router();
  router.put('/uploads/:fileId', validate({
    params: { fileId: fileIdSchema.required() },
    query: { expires: Joi.number().integer().min(0).max(2 ** 40).required(), signature: Joi.string().pattern(/^[A-Za-z0-9_-]{43}$/).required() },
  }), async (req, res) => {
    const deps = depsOf(req);
    const { params, query } = locals(res).valid;
    const length = req.get('content-length');
    await acceptUpload(deps.database.db, fileStoreFor(deps.config), {
      fileId: params.fileId,
      expires: query.expires,
      signature: query.signature,
      contentLength: length === undefined ? undefined : Number(length),
      body: req,
      secretsKey: deps.config.secretsKey,
      now: deps.now(),
    });
    res.status(204).end();
  });
  return router;
}
