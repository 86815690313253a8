import http from 'node:http';

/** A warm-up request not answered within this fails its step (the process becomes ready anyway). */
const CALL_TIMEOUT_MS = 10_000;

/** One request of a warm-up to a server of this process on loopback; its answer read whole. */
export function callSelf(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      // A connection cut mid-answer (the server closing at a shutdown) fails the call, not the process.
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(CALL_TIMEOUT_MS, () => req.destroy(new Error(`no answer in ${CALL_TIMEOUT_MS} ms`)));
    req.end(body);
  });
}
