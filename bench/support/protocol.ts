/** Messages between the bench (parent) and its server process (bench/support/server.ts). */
export type ToServer =
  | { cmd: 'seed' }
  | { cmd: 'setPage'; page: unknown }
  | { cmd: 'start' }
  | { cmd: 'stop' }
  | { cmd: 'exit' };

export interface ServerReady {
  /** limits off, limits on, the bare Express baselines */
  ports: { off: number; on: number; bare: number };
}

export interface SeedResult {
  accountId: string;
  identityId: string;
  /** an API key of the account's owner (scopes: account:manage + the channel scopes) */
  key: string;
  /** 8 channels to post in */
  channels: string[];
  /** a channel holding 60 messages, to read a page of 50 from */
  readChannel: string;
}

export interface StatsSnapshot {
  /** CPU time (user + system) of the server process over the interval, µs */
  cpuUs: number;
  /** of which in the kernel (system time), µs */
  systemUs: number;
  wallMs: number;
  /** PostgreSQL queries sent (one round trip each) */
  pgQueries: number;
  /** Redis commands sent (a pipeline or a script counts its commands as sent by the client) */
  redisCommands: number;
  /** with BENCH_QUERY_LOG=1: each query text (first 160 characters) and how often it was sent */
  queries?: Record<string, number>;
}
