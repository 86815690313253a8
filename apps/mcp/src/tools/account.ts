import { defineTool, fields, idOf, pageQuery, reads, type ToolDef } from './define';

/** The account, its background jobs (account:manage) and its audit log (audit:read). */
export const accountTools: ToolDef[] = [
  defineTool({
    name: 'get_account', title: 'Get the account', toolset: 'Account and jobs', route: 'getAccount',
    description: "Shows the account: plan, state (active, read_only, suspended), seats, and this seat's limits and what it has used today.",
    annotations: reads,
    input: {},
    call: (api, accountId) => api.GET('/accounts/{accountId}', { params: { path: { accountId } } }),
  }),
  defineTool({
    name: 'get_job', title: 'Follow a background job', toolset: 'Account and jobs', route: 'getJob',
    description: 'Shows a background job (e.g. an approved deletion): status queued, running, succeeded or failed, with its result or error.',
    annotations: reads,
    input: { job_id: idOf('job').describe('Job id (`job_id` from an approval or another result).') },
    call: (api, accountId, a) => api.GET('/accounts/{accountId}/jobs/{jobId}', { params: { path: { accountId, jobId: a.job_id } } }),
  }),
  defineTool({
    name: 'read_audit_log', title: 'Read the audit log', toolset: 'Audit', route: 'listAudit',
    description: 'Reads the audit log, newest first: who did what (keys, agents, members, sign-ins, account changes) and through which credential.',
    annotations: reads,
    input: { limit: fields.limit, cursor: fields.cursor },
    call: (api, accountId, a) => api.GET('/accounts/{accountId}/audit', { params: { path: { accountId }, query: pageQuery(a) } }),
  }),
];
