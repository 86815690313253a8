import Joi from 'joi';
import { route } from '../route';
import { fileParams, listQuerySchema, reserveUploadBody, uploadTargetQuery } from '../schemas/requests';
import { fileView, pageOf, uploadReservationView } from '../schemas/views';

const A = '/accounts/{accountId}';
/** Files are for people (spec: Files and search): a credential gets 403 `forbidden`, `web_session_required`. */
const session = { access: 'web_session' } as const;

/** Uploads and files (docs/api.md "Files"): reserve, PUT the bytes to the upload URL, complete; then attach and download. */
export const fileRoutes = [
  route({
    id: 'reserveUpload', method: 'POST', path: `${A}/uploads`, tag: 'Files', ...session, creating: true, idempotent: false,
    summary: 'Reserve an upload',
    description: 'Checks the size against the plan and the account\'s storage, then answers where to PUT the bytes (a signed URL, '
      + 'valid a short while). Complete the upload afterwards.',
    request: { body: reserveUploadBody },
    responses: { 201: { description: 'The pending file and where to send its bytes.', body: uploadReservationView, headers: ['Idempotent-Replayed'] } },
    errors: { budget_exceeded: [] },
  }),
  route({
    id: 'completeUpload', method: 'POST', path: `${A}/uploads/{fileId}/complete`, tag: 'Files', ...session, idempotent: true,
    summary: 'Complete an upload',
    description: 'Checks the stored bytes (exactly the reserved size), records their SHA-256 and makes the file ready to attach.',
    request: { params: fileParams },
    responses: { 200: { description: 'The ready file.', body: fileView } },
    errors: { not_found: [], invalid_request: ['upload_missing', 'size_mismatch'] },
  }),
  route({
    id: 'abandonUpload', method: 'DELETE', path: `${A}/uploads/{fileId}`, tag: 'Files', ...session, idempotent: true,
    summary: 'Abandon an upload',
    description: 'The uploader gives up a pending upload: the reservation and any bytes sent are removed at once, so they no longer '
      + 'count against the account\'s storage (a reservation never completed is otherwise removed after 24 hours). '
      + 'A completed file is no longer an upload: 400 `not_pending`.',
    request: { params: fileParams },
    responses: { 204: { description: 'Abandoned.' } },
    errors: { not_found: [], invalid_request: ['not_pending'] },
  }),
  route({
    id: 'listFiles', method: 'GET', path: `${A}/files`, tag: 'Files', ...session, idempotent: true, list: true,
    summary: 'List the files the caller may see',
    description: 'Files they uploaded, and files attached in channels they are a member of; newest first.',
    request: { query: listQuerySchema },
    responses: { 200: { description: 'A page of files.', body: pageOf(fileView, 'File') } },
  }),
  route({
    id: 'getFile', method: 'GET', path: `${A}/files/{fileId}`, tag: 'Files', ...session, idempotent: true,
    summary: 'Get a file\'s description',
    request: { params: fileParams },
    responses: { 200: { description: 'The file.', body: fileView } },
    errors: { not_found: [] },
  }),
  route({
    id: 'getFileContent', method: 'GET', path: `${A}/files/{fileId}/content`, tag: 'Files', ...session, idempotent: true,
    summary: 'Download a file',
    description: 'Always a download (`Content-Disposition: attachment`, `Content-Security-Policy: sandbox`, never sniffed). '
      + 'Costs what any read costs, 1 call unit per 16 KB of the file (minimum 1), checked before any byte is sent.',
    request: { params: fileParams },
    responses: { 200: { description: 'The bytes, with the file\'s content type.', body: Joi.binary(), contentType: 'application/octet-stream' } },
    errors: { not_found: [] },
  }),
  route({
    id: 'putUploadContent', method: 'PUT', path: '/uploads/{fileId}', hosts: ['web'], tag: 'Files', access: 'public', idempotent: true,
    summary: 'Send a file\'s bytes (local storage)',
    description: 'The upload URL a reservation answers when files are stored on the server\'s disk (with S3 it is the bucket\'s presigned URL). '
      + 'The signed URL is the only permission: no session, no credential. The body is exactly the reserved number of bytes. '
      + 'While the file\'s account is read-only or suspended nothing is stored (403 `read_only` / `suspended`, as every route under the account).',
    request: { params: fileParams, query: uploadTargetQuery },
    responses: { 204: { description: 'Stored; complete the upload next.' } },
    errors: {
      invalid_request: ['size_mismatch', 'not_pending'], forbidden: ['invalid_upload_url', 'upload_url_expired'], not_found: [],
      read_only: [], suspended: [],
    },
  }),
] as const;
