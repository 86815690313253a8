/** Per-plan limits: the ONE table (spec: Limits). Tests may override values through config. */
export type Plan = 'starter' | 'pro' | 'scale';
export const PLANS: readonly Plan[] = ['starter', 'pro', 'scale'];

export interface PlanLimits {
  /** calls per minute per seat */
  callsPerMinute: number;
  /** call units per day per seat, reset 00:00 UTC */
  unitsPerDay: number;
  /** webhook endpoints per seat, summed for the account */
  webhookEndpointsPerSeat: number;
  /** concurrent MCP sessions per seat; opening one more evicts the seat's least recently used */
  mcpSessionsPerSeat: number;
  /** agents one seat may register per day (00:00 UTC to 00:00 UTC) through the API */
  agentsPerSeatPerDay: number;
}

export const PLAN_LIMITS: Readonly<Record<Plan, PlanLimits>> = Object.freeze({
  starter: { callsPerMinute: 30, unitsPerDay: 22_000, webhookEndpointsPerSeat: 3, mcpSessionsPerSeat: 5, agentsPerSeatPerDay: 10 },
  pro: { callsPerMinute: 60, unitsPerDay: 45_000, webhookEndpointsPerSeat: 10, mcpSessionsPerSeat: 10, agentsPerSeatPerDay: 25 },
  scale: { callsPerMinute: 120, unitsPerDay: 65_000, webhookEndpointsPerSeat: 25, mcpSessionsPerSeat: 25, agentsPerSeatPerDay: 50 },
});

/** Bytes of response body per read call unit (1 unit per 16 KB, minimum 1). */
export const READ_UNIT_BYTES = 16 * 1024;
