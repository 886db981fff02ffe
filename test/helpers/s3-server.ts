import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import S3rver from "s3rver";
import { isolateAwsEnvironment } from "./aws-env.js";

/** One request the front let through or refused. */
export interface S3Request {
  method: string;
  /** The path as sent (`/bucket/key`), without the query. */
  path: string;
  /** The query as sent (`uploads=`, `partNumber=1&uploadId=…`). */
  query: string;
  /** The status the front answered with itself (403, 400, a planted 500), or undefined when s3rver answered. */
  refused?: number | undefined;
  /** Whether the body came aws-chunked (and was decoded on the way). */
  chunked: boolean;
}

export interface S3Server {
  /** http://127.0.0.1:PORT: the endpoint to give the AWS SDK (path-style). */
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  requests: S3Request[];
  /** Answer the next `count` requests with `status` (default 500 InternalError) before checking anything. */
  failNext(count: number, status?: number): void;
  /**
   * Holds every PUT once its body is read, until released: `held` resolves
   * when the first one waits. `release("store")` passes them on (stored
   * although their client may be gone); `release("drop")` drops them
   * (their connections destroyed, nothing stored). Later PUTs go through.
   */
  holdPuts(): { held: Promise<void>; release(what: "store" | "drop"): void };
  close(): Promise<void>;
}

export interface S3ServerOptions {
  buckets?: string[];
  accessKeyId?: string;
  secretAccessKey?: string;
}

/**
 * An S3-compatible server on loopback for tests: s3rver behind a front that
 * does what s3rver does not. The front checks every request's SigV4
 * signature against the test's keys (a wrong key or signature gets 403, as
 * from S3) and the payload hash when one is signed, and decodes aws-chunked
 * bodies before s3rver stores them (s3rver would store the chunk framing
 * as the object). It can also be told to fail the next requests, for retry tests.
 */
export async function startS3Server(options: S3ServerOptions = {}): Promise<S3Server> {
  const accessKeyId = options.accessKeyId ?? "WAYPOSTTESTKEY";
  const secretAccessKey = options.secretAccessKey ?? "waypost-test-secret-0123456789";
  const directory = mkdtempSync(path.join(tmpdir(), "waypost-s3-"));
  const backend = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory,
    configureBuckets: (options.buckets ?? ["lake"]).map((name) => ({ name })),
  });
  const backendPort = (await backend.run()).port;
  const requests: S3Request[] = [];
  let failures: { count: number; status: number } = { count: 0, status: 500 };
  let gate: { waiting: Array<(pass: boolean) => void>; first: () => void } | undefined;

  const front = http.createServer(async (req, res) => {
    const [rawPath = "/", query = ""] = (req.url ?? "/").split("?", 2) as [string, string?];
    const record: S3Request = { method: req.method ?? "GET", path: rawPath, query, chunked: false };
    requests.push(record);
    const refuse = (status: number, code: string, message: string) => {
      record.refused = status;
      res.writeHead(status, { "content-type": "application/xml" });
      res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`);
    };
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body: Buffer = Buffer.concat(chunks);
      if (failures.count > 0) {
        failures.count--;
        return refuse(failures.status, failures.status >= 500 ? "InternalError" : "Planted", "planted failure");
      }
      if (gate && req.method === "PUT") {
        const held = gate;
        const pass = await new Promise<boolean>((resolve) => {
          held.waiting.push(resolve);
          held.first();
        });
        if (!pass) {
          record.refused = 0;
          req.socket.destroy();
          return;
        }
      }
      const problem = signatureProblem(req, rawPath, query, body, accessKeyId, secretAccessKey);
      if (problem) return refuse(problem.status, problem.code, problem.message);
      const headers = { ...req.headers };
      let forwarded: Buffer = body;
      if (isChunked(headers)) {
        record.chunked = true;
        forwarded = decodeAwsChunked(body);
        const declared = Number(headers["x-amz-decoded-content-length"]);
        if (forwarded.length !== declared) return refuse(400, "IncompleteBody", "decoded length does not match");
        const encodings = String(headers["content-encoding"] ?? "")
          .split(",")
          .map((e) => e.trim())
          .filter((e) => e !== "" && e !== "aws-chunked");
        if (encodings.length > 0) headers["content-encoding"] = encodings.join(",");
        else delete headers["content-encoding"];
        delete headers["x-amz-decoded-content-length"];
        delete headers["x-amz-trailer"];
        headers["x-amz-content-sha256"] = "UNSIGNED-PAYLOAD";
      }
      // s3rver knows one account only (and checks no V4 signature): the front has checked ours, so name its key.
      headers.authorization = String(headers.authorization).replace(`Credential=${accessKeyId}/`, "Credential=S3RVER/");
      headers["content-length"] = String(forwarded.length);
      delete headers["transfer-encoding"];
      const upstream = http.request({ host: "127.0.0.1", port: backendPort, method: req.method, path: req.url, headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on("error", (error) => refuse(502, "BadGateway", error.message));
      upstream.end(forwarded);
    } catch (error) {
      refuse(500, "InternalError", (error as Error).message);
    }
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  const port = (front.address() as AddressInfo).port;

  return {
    endpoint: `http://127.0.0.1:${port}`,
    accessKeyId,
    secretAccessKey,
    requests,
    failNext(count, status = 500) {
      failures = { count, status };
    },
    holdPuts() {
      let first = () => {};
      const held = new Promise<void>((resolve) => {
        first = resolve;
      });
      const current = { waiting: [] as Array<(pass: boolean) => void>, first };
      gate = current;
      return {
        held,
        release(what) {
          if (gate === current) gate = undefined;
          for (const resolve of current.waiting.splice(0)) resolve(what === "store");
        },
      };
    },
    async close() {
      front.closeAllConnections();
      await new Promise<void>((resolve) => front.close(() => resolve()));
      await backend.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

function isChunked(headers: http.IncomingHttpHeaders): boolean {
  const encoding = String(headers["content-encoding"] ?? "");
  const sha = String(headers["x-amz-content-sha256"] ?? "");
  return encoding.includes("aws-chunked") || sha.startsWith("STREAMING-");
}

/**
 * The payload of an aws-chunked body: chunks of `hex-size[;chunk-signature=…]\r\n`
 * then the bytes then `\r\n`, ended by a chunk of size 0 (trailers, such as a
 * checksum, may follow it and are dropped).
 */
export function decodeAwsChunked(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = body.indexOf("\r\n", at);
    if (lineEnd < 0) throw new Error("aws-chunked body ends inside a chunk header");
    const size = Number.parseInt(body.subarray(at, lineEnd).toString("latin1").split(";")[0]!, 16);
    if (!Number.isFinite(size)) throw new Error("aws-chunked chunk size is not hexadecimal");
    if (size === 0) return Buffer.concat(parts);
    const start = lineEnd + 2;
    if (start + size > body.length) throw new Error("aws-chunked body is shorter than its chunk sizes");
    parts.push(body.subarray(start, start + size));
    at = start + size + 2;
  }
}

type Problem = { status: number; code: string; message: string };

/** Why a request's SigV4 signature is not the one the test's keys make, or undefined when it is. */
function signatureProblem(
  req: http.IncomingMessage,
  rawPath: string,
  query: string,
  body: Buffer,
  accessKeyId: string,
  secretAccessKey: string,
): Problem | undefined {
  const auth = req.headers.authorization ?? "";
  const match =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(
      auth,
    );
  if (!match) return { status: 403, code: "AccessDenied", message: "no SigV4 Authorization header" };
  const [, keyId, day, region, signedHeaders, signature] = match as unknown as [string, string, string, string, string, string];
  if (keyId !== accessKeyId)
    return { status: 403, code: "InvalidAccessKeyId", message: "The AWS Access Key Id you provided does not exist in our records." };
  const amzDate = String(req.headers["x-amz-date"] ?? "");
  const payloadHash = String(req.headers["x-amz-content-sha256"] ?? "");
  if (!amzDate.startsWith(day) || payloadHash === "")
    return { status: 403, code: "AccessDenied", message: "x-amz-date or x-amz-content-sha256 missing" };
  if (/^[0-9a-f]{64}$/.test(payloadHash) && sha256(body) !== payloadHash) {
    return { status: 400, code: "XAmzContentSHA256Mismatch", message: "payload hash does not match" };
  }
  const canonicalHeaders = signedHeaders
    .split(";")
    .map(
      (name) =>
        `${name}:${String(req.headers[name] ?? "")
          .trim()
          .replace(/\s+/g, " ")}\n`,
    )
    .join("");
  const canonicalRequest = [req.method, rawPath, canonicalQuery(query), canonicalHeaders, signedHeaders, payloadHash].join("\n");
  const scope = `${day}/${region}/s3/aws4_request`;
  const stringToSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256(canonicalRequest)].join("\n");
  let key: Buffer = hmac(`AWS4${secretAccessKey}`, day);
  for (const part of [region, "s3", "aws4_request"]) key = hmac(key, part);
  const expected = Buffer.from(hmac(key, stringToSign).toString("hex"));
  if (!timingSafeEqual(expected, Buffer.from(signature))) {
    return {
      status: 403,
      code: "SignatureDoesNotMatch",
      message: "The request signature we calculated does not match the signature you provided.",
    };
  }
  return undefined;
}

/** The query with its pairs sorted and each part encoded as SigV4 wants (RFC 3986, `%20` for a space). */
function canonicalQuery(query: string): string {
  if (query === "") return "";
  const encode = (text: string) =>
    encodeURIComponent(decodeURIComponent(text.replace(/\+/g, "%20"))).replace(
      /[!'()*]/g,
      (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
    );
  return query
    .split("&")
    .map((pair) => {
      const eq = pair.indexOf("=");
      return eq < 0 ? [encode(pair), ""] : [encode(pair.slice(0, eq)), encode(pair.slice(eq + 1))];
    })
    .sort(([a = "", x = ""], [b = "", y = ""]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join("&");
}

const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");
const hmac = (key: string | Buffer, data: string) => createHmac("sha256", key).update(data).digest();

/** The hooks of a test file (vitest's, or a testWith test's). */
interface FileHooks {
  beforeAll(fn: () => Promise<void>): void;
  afterAll(fn: () => Promise<void>): void;
}

/**
 * An S3 test server for a test file, with the AWS SDK kept off the instance
 * metadata service and the machine's AWS files (aws-env.ts), and a scratch
 * directory: started before the file's tests, closed and removed after.
 */
export function useS3Server(hooks: FileHooks, name: string, options: S3ServerOptions = { buckets: ["lake"] }) {
  const scratch = mkdtempSync(path.join(tmpdir(), `${name}-`));
  let server: S3Server | undefined;
  let restoreEnv: (() => void) | undefined;
  hooks.beforeAll(async () => {
    restoreEnv = isolateAwsEnvironment();
    server = await startS3Server(options);
  });
  hooks.afterAll(async () => {
    await server?.close();
    restoreEnv?.();
    rmSync(scratch, { recursive: true, force: true });
  });
  return {
    scratch,
    get s3(): S3Server {
      if (!server) throw new Error("the S3 test server starts in beforeAll");
      return server;
    },
  };
}
