import { Router } from 'express';

/** Channels, messages, threads, reactions and DMs under /accounts/{accountId}. */
export function messagingRouter(): Router {
  return Router({ mergeParams: true });
}

/** Top-level /approvals/{id} routes (web session only). */
export function approvalsRouter(): Router {
  return Router();
}
