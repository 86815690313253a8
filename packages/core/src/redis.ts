import type { Socket } from 'node:net';
import Redis, { RedisOptions } from 'ioredis';

/**
 * A producer's command that gets no answer in this long (ms) fails, so a Redis that accepts
 * connections but answers nothing cannot hang a request (docs/limits.md, 'When Redis is away').
 */
export const PRODUCER_COMMAND_TIMEOUT_MS = 1_000;

/**
 * Redis connections. Producers (the API) fail fast instead of queueing commands while Redis is
 * away, and give up on a command after PRODUCER_COMMAND_TIMEOUT_MS; workers wait for it (BullMQ
 * requires maxRetriesPerRequest: null for blocking commands).
 */
export function createRedis(url: string, role: 'producer' | 'worker', extra: RedisOptions = {}): Redis {
  const options: RedisOptions =
    role === 'producer'
      ? { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: PRODUCER_COMMAND_TIMEOUT_MS, ...extra }
      : { maxRetriesPerRequest: null, ...extra };
  const redis = new Redis(url, options);
  if (role === 'producer') coalesceWrites(redis);
  // Without a listener an unreachable Redis would crash the process with an unhandled 'error'.
  redis.on('error', () => undefined);
  return redis;
}

/**
 * Commands a producer sends in one turn of the event loop leave in one socket write: the socket
 * is corked at the first command and uncorked at the end of the turn (setImmediate). Under load
 * the limit checks of many requests then cost one write system call instead of one each; a lone
 * command waits only for the rest of the current turn.
 */
function coalesceWrites(redis: Redis): void {
  redis.on('connect', () => {
    const socket = redis.stream as Socket & { [CORKED]?: true };
    if (!socket || socket[CORKED]) return;
    socket[CORKED] = true;
    const write = socket.write;
    let corked = false;
    const uncork = () => {
      corked = false;
      socket.uncork();
    };
    socket.write = function coalescedWrite(this: Socket, ...args: Parameters<Socket['write']>) {
      if (!corked) {
        corked = true;
        socket.cork();
        setImmediate(uncork);
      }
      return write.apply(this, args);
    } as Socket['write'];
  });
}
const CORKED = Symbol('teamchat.corked');

/** Resolves once the connection is ready (a producer with enableOfflineQueue:false needs this at boot). */
export async function waitReady(redis: Redis, timeoutMs = 5000): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('Redis did not become ready in time')), timeoutMs);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
