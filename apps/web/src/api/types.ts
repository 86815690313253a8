/** Response shapes the pages read (docs/api.md, docs/webhooks.md); unknown fields are ignored. */
export interface EndpointHealth {
  last_success_at: string | null;
  last_failure_at: string | null;
  success_rate_24h: number | null;
  attempts_24h: number;
  median_latency_ms: number | null;
  pending_count: number;
}

export interface Endpoint {
  id: string;
  url: string;
  events: string[];
  channels: 'all' | string[];
  payload: string;
  enabled: boolean;
  disabled_reason: string | null;
  secret_pending_reveal: boolean;
  previous_valid_until: string | null;
  authorization_set: boolean;
  created_via: string;
  version: number;
  created_at: string;
  health?: EndpointHealth;
  secret?: string;
  test_delivery?: TestDelivery;
}

export interface TestDelivery {
  delivery_id: string | null;
  status: string;
  response_status: number | null;
  latency_ms: number | null;
  error: string | null;
}

export interface Delivery {
  id: string;
  event_id: string;
  event_type: string;
  kind: string;
  attempt: number;
  status: string;
  next_retry_at: string | null;
  response_status: number | null;
  latency_ms: number | null;
  error: string | null;
  created_at: string;
  attempted_at: string | null;
}

export interface Channel {
  id: string;
  kind: 'channel' | 'dm';
  name: string | null;
  topic: string | null;
  is_member?: boolean;
  members?: string[];
}

export interface Message {
  ts: string;
  channel_id: string;
  author: string;
  text: string;
  thread_ts: string | null;
  reply_count?: number;
  reactions: Array<{ emoji: string; count: number; by: string[] }>;
  version: number;
  created_at: string;
  edited_at: string | null;
}
