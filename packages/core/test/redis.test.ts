/**
 * A producer connection sends the commands of one event-loop turn in one socket write
 * (corked until the end of the turn), and every command is still answered, in order; and it
 * never sends a command again on a new connection once its caller was told it failed.
 */
import type { Socket } from 'node:net';
import { createRedis, randomToken, waitReady } from '@teamchat/core';
import { TEST_REDIS_URL } from '../../../test/support/env';
import { tcpProxy } from '../../../test/support/tcp-proxy';

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

test('a producer never sends a command again after its caller was told it failed (docs/limits.md "When Redis is away")', async () => {
  // A Redis that stops answering, then a new connection (as the connection watch makes): the
  // command that timed out on the old one must not run again on the new one behind its
  // caller's back (ioredis' default resends it: the key would be 2).
  const upstream = new URL(TEST_REDIS_URL);
  const proxy = await tcpProxy({ host: upstream.hostname, port: Number(upstream.port || 6379) });
  const redis = createRedis(`redis://127.0.0.1:${proxy.port}`, 'producer', {}, 200);
  const direct = createRedis(TEST_REDIS_URL, 'producer');
  const key = `test-no-resend-${randomToken(8)}`;
  try {
    await Promise.all([waitReady(redis), waitReady(direct)]);
    proxy.freeze();
    await expect(redis.incr(key)).rejects.toThrow(/timed out/i);
    const closed = new Promise((resolve) => redis.once('close', resolve));
    redis.disconnect(true);
    await closed;
    const ready = new Promise((resolve) => redis.once('ready', resolve));
    proxy.thaw();
    await ready;
    expect(await redis.ping()).toBe('PONG');
    await new Promise((r) => setTimeout(r, 200));
    // Once, by the old connection's bytes that the thawed Redis read late; never a second time.
    expect(await direct.get(key)).toBe('1');
    // the worker's connection keeps ioredis' resend: BullMQ's commands wait without a timeout
    expect(createRedis(TEST_REDIS_URL, 'worker', { lazyConnect: true }).options.autoResendUnfulfilledCommands).toBe(true);
  } finally {
    redis.disconnect();
    direct.disconnect();
    await proxy.close();
  }
});
