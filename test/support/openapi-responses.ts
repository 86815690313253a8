/**
 * Every response a test receives through supertest from one of the API's apps is checked against
 * the OpenAPI document (packages/contract; docs/api.md "The OpenAPI document"): its status must be
 * one the operation declares, and its JSON body must match that status's schema (ajv, JSON Schema
 * 2020-12). A mismatch fails the request, and so the test that made it. Registered for every test
 * file by jest.config.ts (`setupFilesAfterEnv`); apps other than the API's (the MCP server, test
 * receivers) are not checked.
 */
import type { Server } from 'node:http';
import { Test } from 'supertest';
import { responseProblem } from './openapi-check';

type AssertFn = (resError: unknown, res: unknown, fn?: (err: unknown, res: unknown) => void) => void;

interface TestLike {
  app?: unknown;
  method?: string;
  url?: string;
}

/** The host an app serves, if it is one of the API's (createApp marks it). */
function hostOf(app: unknown): 'api' | 'web' | null {
  const listener = typeof app === 'function' ? app : (app as Server | undefined)?.listeners?.('request')?.[0];
  const host = (listener as { get?: (name: string) => unknown } | undefined)?.get?.('public host');
  return host === 'api' || host === 'web' ? host : null;
}

const proto = Test.prototype as unknown as { assert: AssertFn; __openapiChecked?: boolean };
if (!proto.__openapiChecked) {
  proto.__openapiChecked = true;
  const original = proto.assert;
  proto.assert = function checkedAssert(this: TestLike, resError, res, fn) {
    const host = res ? hostOf(this.app) : null;
    const problem = host && res ? responseProblem(host, this.method ?? 'GET', this.url ?? '/', res as never) : null;
    if (!problem) {
      original.call(this, resError, res, fn);
      return;
    }
    original.call(this, resError, res, (err, r) => fn?.call(this, err ?? new Error(problem), r));
  };
}
