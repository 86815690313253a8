import type { Response } from 'express';
import { pipeline } from 'node:stream/promises';
import {
  abandonUpload, completeUpload, fileStoreFor, getFile, listFiles, readFileContent, reserveUpload, toFileView, type FileRow,
} from '@teamchat/core';
import { creating } from '../http/create';
import { chargeKnownRead } from '../http/limits';
import { listRequest, sendPage } from '../http/lists';
import { actorOf, depsOf, locals } from '../http/locals';
import type { HandlerMap } from './handlers';

/** `attachment; filename="…"; filename*=UTF-8''…` (RFC 6266): an ASCII fallback and the exact name. */
function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}

/** Headers of a file's bytes: always a download, never rendered or sniffed from our origin. */
function setContentHeaders(res: Response, file: FileRow): void {
  res.setHeader('Content-Type', file.contentType);
  res.setHeader('Content-Length', String(file.size));
  res.setHeader('Content-Disposition', contentDisposition(file.name));
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Security-Policy', 'sandbox');
  res.setHeader('Cache-Control', 'private, no-store');
}

/**
 * Uploads and files (spec: Files and search; docs/api.md "Files"). Web session only: a credential
 * gets 403 forbidden, reason web_session_required.
 */
export const filesHandlers = {
  reserveUpload: creating(async ({ tx, deps, actor, body }) => {
    const out = await reserveUpload(tx, deps.config, fileStoreFor(deps.config), {
      actor, name: body.name, size: body.size, contentType: body.content_type, now: deps.now(),
    });
    return {
      status: 201,
      body: {
        file: toFileView(out.file),
        upload: { url: out.upload.url, method: 'PUT', headers: out.upload.headers, expires_at: out.upload.expiresAt.toISOString() },
      },
    };
  }),

  completeUpload: async (req, res) => {
    const deps = depsOf(req);
    const file = await completeUpload(deps.database.db, fileStoreFor(deps.config), {
      actor: actorOf(res), fileId: locals(res).valid.params.fileId, now: deps.now(),
    });
    res.json(toFileView(file));
  },

  abandonUpload: async (req, res) => {
    const deps = depsOf(req);
    await abandonUpload(deps.database.db, fileStoreFor(deps.config), { actor: actorOf(res), fileId: locals(res).valid.params.fileId });
    res.status(204).end();
  },

  listFiles: async (req, res) => {
    const page = listRequest<string>(req, res, 'files');
    const after = page.after === null ? null : Number(page.after);
    const rows = await listFiles(depsOf(req).database.db, { actor: actorOf(res), limit: page.limit, after });
    sendPage(req, res, 'files', rows, page.limit, toFileView, (f) => String(f.seq));
  },

  getFile: async (req, res) => {
    res.json(toFileView(await getFile(depsOf(req).database.db, { actor: actorOf(res), fileId: locals(res).valid.params.fileId })));
  },

  getFileContent: async (req, res) => {
    const deps = depsOf(req);
    const { file, body } = await readFileContent(deps.database.db, fileStoreFor(deps.config), {
      actor: actorOf(res), fileId: locals(res).valid.params.fileId,
    });
    // A download costs what any read costs, 1 unit per 16 KB (spec: Limits), charged from the
    // row's size before streaming: a spent budget answers 429 before any byte is sent.
    try {
      await chargeKnownRead(res, file.size);
    } catch (err) {
      body.destroy();
      throw err;
    }
    setContentHeaders(res, file);
    await pipeline(body, res);
  },
} satisfies HandlerMap;
