import { STATUS_CODES, maxHeaderSize, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { AppError, randomIdToken, type Logger } from '@teamchat/core';

/**
 * What a request Node's HTTP parser refuses, before the app sees it, is answered: headers over
 * Node's limit, a malformed request line or header, a request not read in time. Node's own
 * answer is a bare 400, 431 or 408 with no body and no X-Request-Id; this one is the error shape
 * every other refusal has and carries an X-Request-Id (spec: Hosts rule 5, "every response"),
 * always 400 `invalid_request` (the spec's error table has no 431 or 408, as for an oversize body,
 * docs/api.md "Hostile input"), with a `reason`.
 */
function refusalOf(parserCode: string | undefined): AppError {
  if (parserCode === 'HPE_HEADER_OVERFLOW') {
    return new AppError('invalid_request', `The request's headers are larger than ${maxHeaderSize} bytes.`, { field: 'headers', reason: 'headers_too_large', limit_bytes: maxHeaderSize });
  }
  if (parserCode === 'ERR_HTTP_REQUEST_TIMEOUT') return new AppError('invalid_request', 'The request was not received in time.', { reason: 'request_timeout' });
  return new AppError('invalid_request', 'The request is not valid HTTP.', { reason: 'malformed_request' });
}

/** Answers the server's client errors as refusalOf says, on a socket that can still take it; a reset connection is only closed. */
export function answerClientErrors(server: Server, logger: Logger): void {
  server.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const refusal = refusalOf(err.code);
    const requestId = `req_${randomIdToken(20)}`;
    const body = JSON.stringify({ error: { code: refusal.code, message: refusal.message, ...refusal.extras } });
    logger.info('request refused by the HTTP parser', { request_id: requestId, status: refusal.status, parser_code: err.code ?? null, reason: refusal.extras.reason });
    socket.end([
      `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      `X-Request-Id: ${requestId}`,
      'Connection: close',
      '',
      body,
    ].join('\r\n'));
  });
}
