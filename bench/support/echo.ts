/**
 * A bare Express app with `POST /echo` (JSON echoed), in its own process (forked by
 * bench/users.bench.ts): the baseline of the API write row. Sends `{ port }` once listening.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';

const app = express();
app.use(express.json());
app.post('/echo', (req, res) => { res.json(req.body); });
const server = app.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
server.keepAliveTimeout = 60_000;
process.on('SIGTERM', () => process.exit(0));
