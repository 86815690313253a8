import { fork } from 'node:child_process';
import net from 'node:net';
import { r1 } from './pace';

/**
 * Two figures that tell hosts apart (docs/performance.md "Reading the figures"), measured at the
 * start of every run and kept with its results:
 * - `loopbackRoundTripUs`, `loopbackCpuUs`: one byte sent to another process over loopback TCP
 *   and echoed back (Nagle off), its wall time and this side's CPU per round trip. Every request
 *   and delivery is a chain of such hops (client → API → PostgreSQL → worker → Redis →
 *   receiver), so this is what a hop costs on the host: a wake-up of another process and two
 *   system calls.
 * - `jsonUs`: `JSON.stringify` then `JSON.parse` of a ~2 KB object, the compute a request does
 *   between its hops.
 * A host whose hops are dear next to its compute (a virtual machine whose cross-process wake-ups
 * are slow) misses the latency targets first; one whose hops are cheap has fast bare baselines,
 * and the throughput ratios to them are the hardest there.
 */
export interface HostProbe {
  loopbackRoundTripUs: number;
  loopbackCpuUs: number;
  jsonUs: number;
}

const ROUND_TRIPS = 5_000;
const WARM_UP = 500;

export async function probeHost(): Promise<HostProbe> {
  const { roundTripUs, cpuUs } = await loopbackRoundTrips();
  return { loopbackRoundTripUs: r1(roundTripUs), loopbackCpuUs: r1(cpuUs), jsonUs: r1(jsonRoundTrip()) };
}

export function describeProbe(p: HostProbe): string {
  return `loopback round trip between two processes ${p.loopbackRoundTripUs} µs (${p.loopbackCpuUs} µs of CPU on one side), JSON round trip of a 2 KB object ${p.jsonUs} µs`;
}

/** The echoing side: a child process (this file, run with ECHO_PROBE=1) that answers each byte. */
if (process.env.ECHO_PROBE === '1') {
  const server = net.createServer((s) => {
    s.setNoDelay(true);
    s.on('data', (d) => s.write(d));
  });
  server.listen(0, '127.0.0.1', () => process.send?.((server.address() as net.AddressInfo).port));
  process.on('disconnect', () => process.exit(0));
}

async function loopbackRoundTrips(): Promise<{ roundTripUs: number; cpuUs: number }> {
  const child = fork(__filename, [], { env: { ...process.env, ECHO_PROBE: '1' }, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once('message', (m) => resolve(Number(m)));
      child.once('exit', (code) => reject(new Error(`the echo probe exited (${code})`)));
    });
    const socket = net.connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    let sent = 0;
    let startedAt = 0n;
    let cpu0 = process.cpuUsage();
    const result = await new Promise<{ roundTripUs: number; cpuUs: number }>((resolve) => {
      socket.on('data', () => {
        sent += 1;
        if (sent === WARM_UP) {
          startedAt = process.hrtime.bigint();
          cpu0 = process.cpuUsage();
        }
        if (sent === WARM_UP + ROUND_TRIPS) {
          const cpu = process.cpuUsage(cpu0);
          resolve({ roundTripUs: Number(process.hrtime.bigint() - startedAt) / 1000 / ROUND_TRIPS, cpuUs: (cpu.user + cpu.system) / ROUND_TRIPS });
          return;
        }
        socket.write('x');
      });
      socket.write('x');
    });
    socket.destroy();
    return result;
  } finally {
    child.kill();
  }
}

function jsonRoundTrip(): number {
  const sample = {
    id: 'msg_0123456789abcdef',
    channel: 'chn_0123456789abcdef',
    items: Array.from({ length: 20 }, (_, i) => ({ ts: `1764300000.${String(i).padStart(6, '0')}`, author: 'idn_0123456789abcdef', text: 'a message of about sixty characters, as a chat message is.', edited: i % 3 === 0 })),
  };
  const n = 20_000;
  for (let i = 0; i < 2_000; i++) JSON.parse(JSON.stringify(sample));
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) JSON.parse(JSON.stringify(sample));
  return Number(process.hrtime.bigint() - t) / 1000 / n;
}
