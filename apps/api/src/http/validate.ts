import type { NextFunction, Request, Response } from 'express';
import Joi from 'joi';
import { AppError } from '@teamchat/core';
import type { RequestSchemas } from '@teamchat/contract';
import { clip, findHostileInput } from './input-guard';
import { locals } from './locals';

export type { RequestSchemas };

/** 400 invalid_request naming the first problem's field, all problems in `details` (each clipped: Joi may quote the value). */
function invalid(part: string, problems: Array<{ field: string; message: string }>): AppError {
  const details = problems.slice(0, 20).map((d) => ({ field: clip(d.field, 100), message: clip(d.message, 300) }));
  return new AppError('invalid_request', `Invalid ${part === 'body' ? 'field' : part} ${details[0].field}: ${details[0].message}.`, {
    field: details[0].field,
    details,
  });
}

/**
 * Validates params, query, body and headers at the edge. First, every string of the path
 * params, the query and the body, known fields or not, must pass the input guard (no NUL, no
 * lone surrogate, bounded nesting; docs/api.md "Hostile input"). Unknown fields are ignored (stripped);
 * the first problem is named in `field`, all of them in `details`. Coerced values land in
 * res.locals.valid (Express 5 makes req.query read-only).
 */
export function validate(schemas: RequestSchemas) {
  // The options live on each schema, not in every validate() call: Joi merges call options into
  // its defaults (and recompiles a schema's custom messages) on every call, but caches a schema's
  // own preferences after its first use. A schema's own preferences still win over these.
  // `convert` stays on for every part (a query is all strings, a date arrives as text, strings are
  // trimmed): how far a value may be converted is its schema's rule (core input-rules.ts: a body's
  // numbers and booleans are strict, a query's whole numbers are digits, date-times RFC 3339).
  const prefs = (part: 'params' | 'query' | 'body' | 'headers'): Joi.ValidationOptions =>
    ({ abortEarly: false, stripUnknown: part === 'body', convert: true });
  const body = schemas.body ? (Joi.isSchema(schemas.body) ? (schemas.body as Joi.ObjectSchema) : Joi.object(schemas.body)) : null;
  const compiled = {
    params: schemas.params ? Joi.object(schemas.params).unknown(true).prefs(prefs('params')) : null,
    query: schemas.query ? Joi.object(schemas.query).unknown(true).prefs(prefs('query')) : null,
    body: body ? Joi.object().prefs(prefs('body')).concat(body) : null,
    headers: schemas.headers ? Joi.object(schemas.headers).unknown(true).prefs(prefs('headers')) : null,
  };
  return (req: Request, res: Response, next: NextFunction) => {
    const valid = locals(res).valid;
    const sources = { params: req.params, query: req.query, body: req.body ?? {}, headers: req.headers } as const;
    for (const part of ['params', 'query', 'body'] as const) {
      const hostile = findHostileInput(sources[part], part);
      if (hostile) throw invalid(part, [hostile]);
    }
    for (const part of ['params', 'query', 'headers', 'body'] as const) {
      const schema = compiled[part];
      if (!schema) continue;
      const input = sources[part];
      if (part === 'body' && (typeof input !== 'object' || input === null || Array.isArray(input))) {
        throw new AppError('invalid_request', 'The request body must be a JSON object.', { field: 'body' });
      }
      const { value, error } = schema.validate(input);
      // A schema that names its own spec error (`.error()`, e.g. the list cursor's invalid_cursor) answers it as is.
      if ((error as unknown) instanceof AppError) throw error;
      if (error) {
        throw invalid(part, error.details.map((d) => ({ field: d.path.join('.') || part, message: d.message.replace(/"/g, '') })));
      }
      valid[part] = value;
    }
    next();
  };
}
