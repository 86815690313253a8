import { acceptUpload, fileStoreFor } from '@teamchat/core';
import { depsOf, locals } from '../http/locals';
import type { HandlerMap } from './handlers';

/**
 * The local driver's upload URL, on the web host (docs/api.md "Files"): `PUT /uploads/{fileId}
 * ?expires=…&signature=…` with exactly the reserved number of bytes. The signed URL is the only
 * permission (no cookie, no credential, so it works from `fetch` as an S3 presigned URL does);
 * mounted before the JSON body parser and authentication, so the body streams to storage as sent.
 */
export const uploadTargetHandlers = {
  putUploadContent: async (req, res) => {
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
  },
} satisfies HandlerMap;
