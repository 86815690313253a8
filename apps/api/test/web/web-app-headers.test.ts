import express from 'express';
import request from 'supertest';
import { uploadOrigins, webSecurityHeaders } from '../../src/http/web-app';

/**
 * The web app's Content-Security-Policy lets the browser send an upload's bytes where the
 * storage driver's upload URL points (docs/web.md "Serving"): its own origin for the local
 * driver, the S3 server's for the S3 driver, and nowhere else.
 */
const base = { s3Endpoint: null, s3Bucket: null, s3Region: 'us-east-1' };

function appWith(config: Parameters<typeof webSecurityHeaders>[0]) {
  const app = express();
  app.use(webSecurityHeaders(config));
  app.get('/', (_req, res) => res.send('ok'));
  return app;
}

const connectSrc = (csp: string) => csp.split('; ').find((d) => d.startsWith('connect-src'));

test("local driver: connect-src 'self' only", async () => {
  expect(uploadOrigins({ ...base, filesDriver: 'local' })).toEqual([]);
  const res = await request(appWith({ ...base, filesDriver: 'local' })).get('/').expect(200);
  expect(connectSrc(res.headers['content-security-policy'] as string)).toBe("connect-src 'self'");
});

test('S3 driver with S3_ENDPOINT: its origin (path-style presigned URLs), no path', async () => {
  const config = { ...base, filesDriver: 's3' as const, s3Endpoint: 'https://files.example.com:9000/base', s3Bucket: 'team' };
  const res = await request(appWith(config)).get('/').expect(200);
  expect(connectSrc(res.headers['content-security-policy'] as string)).toBe("connect-src 'self' https://files.example.com:9000");
});

test('S3 driver on AWS: the bucket’s virtual-hosted origin and the region’s path-style one', () => {
  expect(uploadOrigins({ ...base, filesDriver: 's3', s3Bucket: 'team-files', s3Region: 'eu-west-1' })).toEqual([
    'https://team-files.s3.eu-west-1.amazonaws.com',
    'https://s3.eu-west-1.amazonaws.com',
  ]);
});
