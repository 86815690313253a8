import { errors, sqlStateOf, type AppError } from '@teamchat/core';

/**
 * The safety net behind the edge's checks (docs/api.md "Hostile input"): failures that only
 * caller input can cause, turned into 400 invalid_request instead of 500. Used by the error
 * handler only; the edge (Joi and the input guard) should have refused such input first.
 */
export function fromCallerInput(err: unknown): AppError | null {
  // The router could not percent-decode a path segment (`%zz`, `%ED%A0%80`): router sets status 400.
  if (err instanceof URIError && (err as { status?: number }).status === 400) {
    return errors.invalid('The path holds a malformed percent-encoding.', { field: 'path' });
  }
  // body-parser's stream failures carry no `type` (a corrupt gzip body: zlib's "incorrect header
  // check"); http-errors marks every client error `expose` with a 4xx status.
  const httpError = err as { expose?: unknown; status?: unknown };
  if (httpError.expose === true && typeof httpError.status === 'number' && httpError.status >= 400 && httpError.status < 500) {
    return errors.invalid('The request body could not be read (is its Content-Encoding right?).', { field: 'body' });
  }
  const sqlstate = sqlStateOf(err);
  // SQLSTATE class 22, data exception: invalid text encoding (22021), NUL in jsonb (22P05),
  // a number out of range (22003), bad text for a type (22P02), bad date/time (22007, 22008), ...
  if (sqlstate?.startsWith('22')) return errors.invalid('A value in the request cannot be stored or compared as given.');
  return null;
}
