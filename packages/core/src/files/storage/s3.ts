import type { Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Config } from '../../config';
import { exactLength } from './local';
import type { FileStore, PresignInput, UploadTarget } from './store';

/**
 * The SDK's own log, dropped. With no logger given, the SDK writes some warnings straight to
 * `console` (a streamed PUT that fails: "An error was encountered in a non-retryable streaming
 * request"), a plain-text line among the service's JSON logs. Every such failure reaches the
 * caller as the `put`'s error, so the SDK's copy says nothing the caller cannot.
 */
const SILENT_SDK_LOGGER = { trace() {}, debug() {}, info() {}, warn() {}, error() {} };

/**
 * How long the driver waits for S3, so that a storage that does not answer (a partition, a stalled
 * endpoint) fails the request instead of holding it: a connection within S3_CONNECT_TIMEOUT_MS, an
 * answer's headers within S3_ANSWER_TIMEOUT_MS, S3_MAX_ATTEMPTS tries in all (about 10 s at worst).
 * A download's body, once it flows, is not bounded: a slow reader pauses it. The streamed `put`
 * is bounded only by its connection, as its body comes at its sender's pace.
 */
export const S3_CONNECT_TIMEOUT_MS = 3000;
export const S3_ANSWER_TIMEOUT_MS = 5000;
export const S3_MAX_ATTEMPTS = 2;

const missing = (err: unknown) => {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NotFound' || e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404;
};

/**
 * Files in an S3-compatible bucket (FILES_DRIVER=s3). Credentials come from the SDK's usual
 * environment (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, a profile, an instance role). Checksums
 * only WHEN_REQUIRED: with the SDK's default a streamed put is sent with aws-chunked framing,
 * which some S3-compatible servers store with the bytes, and a browser's presigned PUT carries no
 * checksum. The presigned PUT signs Content-Length and Content-Type, so a body of another
 * length is refused by the server.
 */
export class S3FileStore implements FileStore {
  readonly driver = 's3' as const;
  private readonly client: S3Client;
  private readonly bucket: string;

  constructor(config: Readonly<Config>) {
    if (!config.s3Bucket) throw new Error('FILES_DRIVER=s3 needs S3_BUCKET');
    this.bucket = config.s3Bucket;
    this.client = new S3Client({
      region: config.s3Region,
      ...(config.s3Endpoint ? { endpoint: config.s3Endpoint, forcePathStyle: true } : {}),
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      logger: SILENT_SDK_LOGGER,
      requestHandler: { connectionTimeout: S3_CONNECT_TIMEOUT_MS, requestTimeout: S3_ANSWER_TIMEOUT_MS, throwOnRequestTimeout: true },
      maxAttempts: S3_MAX_ATTEMPTS,
    });
  }

  async put(key: string, body: Readable, size: number): Promise<void> {
    // A short stream would leave the request waiting for the announced length: abort it as soon
    // as the length check fails (pipe does not forward the error to the SDK's reader).
    const abort = new AbortController();
    const checked = exactLength(size);
    let mismatch: Error | undefined;
    checked.on('error', (err) => {
      mismatch = err;
      abort.abort();
    });
    body.on('error', (err) => checked.destroy(err));
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body.pipe(checked), ContentLength: size }), {
        abortSignal: abort.signal,
        requestTimeout: 0,
      });
    } catch (err) {
      // an aborted PUT stores nothing on S3; some compatible servers keep what they received
      if (mismatch) await this.delete(key).catch(() => undefined);
      throw mismatch ?? err;
    }
  }

  async get(key: string): Promise<Readable | null> {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return out.Body as Readable;
    } catch (err) {
      if (missing(err)) return null;
      throw err;
    }
  }

  async head(key: string): Promise<{ size: number } | null> {
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { size: Number(out.ContentLength ?? 0) };
    } catch (err) {
      if (missing(err)) return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  async presignPut(input: PresignInput): Promise<UploadTarget> {
    const expiresIn = Math.max(1, Math.floor((input.expiresAt.getTime() - Date.now()) / 1000));
    const url = await getSignedUrl(
      this.client,
      new PutObjectCommand({ Bucket: this.bucket, Key: input.key, ContentLength: input.size, ContentType: input.contentType }),
      { expiresIn, signableHeaders: new Set(['content-length', 'content-type']) },
    );
    return { url, headers: { 'Content-Type': input.contentType } };
  }

  /** Closes the client's connections (tests). */
  close(): void {
    this.client.destroy();
  }
}
