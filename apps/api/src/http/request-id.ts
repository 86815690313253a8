import type { NextFunction, Request, Response } from 'express';
import { randomIdToken } from '@teamchat/core';
import { depsOf, locals, type Host } from './locals';

/** Echo a sane incoming X-Request-Id, else make one; every response carries it (spec: Hosts rule 5). */
const SANE = /^[A-Za-z0-9._:-]{8,128}$/;

export function requestContext(host: Host) {
  return (req: Request, res: Response, next: NextFunction) => {
    const incoming = req.get('x-request-id');
    const requestId = incoming && SANE.test(incoming) ? incoming : `req_${randomIdToken(20)}`;
    res.setHeader('X-Request-Id', requestId);
    const l = locals(res);
    l.requestId = requestId;
    l.host = host;
    l.valid = { params: {}, query: {}, body: {}, headers: {} };
    l.log = depsOf(req).logger.child({ request_id: requestId, host });
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      l.log.info('request', {
        method: req.method,
        path: req.path,
        status: res.statusCode,
        ms: Number(process.hrtime.bigint() - started) / 1e6,
        principal: l.principal?.id,
      });
    });
    next();
  };
}
