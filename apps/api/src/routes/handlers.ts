import type { RequestHandler } from 'express';
import type { RouteId } from '@teamchat/contract';

/** A route's handler, keyed by its declaration's id (packages/contract); the builder adds the checks the declaration names. */
export type HandlerMap = Partial<Record<RouteId, RequestHandler>>;
