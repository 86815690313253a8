/**
 * A producer connection sends the commands of one event-loop turn in one socket write
 * (corked until the end of the turn), and every command is still answered, in order.
 */
import type { Socket } from 'node:net';
import { createRedis, waitReady } from '@teamchat/core';
import { TEST_REDIS_URL } from '../../../test/support/env';

test('commands of one turn are held (corked) until the turn ends, then all answered in order', async () => {
  const redis = createRedis(TEST_REDIS_URL, 'producer');
  try {
    await waitReady(redis);
    const socket = redis.stream as Socket;
    const replies = Array.from({ length: 20 }, (_, i) => redis.echo(`m${i}`));
    expect(socket.writableCorked).toBe(1);
    await new Promise((r) => setImmediate(r));
    expect(socket.writableCorked).toBe(0);
    expect(await Promise.all(replies)).toEqual(Array.from({ length: 20 }, (_, i) => `m${i}`));
    // a lone command later is answered too
    expect(await redis.ping()).toBe('PONG');
  } finally {
    redis.disconnect();
  }
});

test('a worker connection is left as ioredis makes it', async () => {
  const redis = createRedis(TEST_REDIS_URL, 'worker');
  try {
    await waitReady(redis);
    const pending = redis.ping();
    expect((redis.stream as Socket).writableCorked).toBe(0);
    expect(await pending).toBe('PONG');
  } finally {
    redis.disconnect();
  }
});
