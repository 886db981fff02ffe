import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { Agent } from "undici";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { postWebhook, type PostOptions } from "../../src/outbound/post-webhook.js";

// postWebhook against a real HTTP server on loopback, through an undici Agent
// as the delivery loop uses it.

let server: Server;
let origin: string;
let agent: Agent;
let handle: (req: IncomingMessage, res: ServerResponse) => void = (_, res) => res.end("ok");
const sockets = new Set<Socket>();
let connections = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on("end", () => handle(req, res));
  });
  server.on("connection", (socket: Socket) => {
    connections++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterEach(async () => {
  await agent?.close();
  handle = (_, res) => res.end("ok");
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  server.close();
});

function post(overrides: Partial<PostOptions> = {}) {
  agent ??= new Agent({ headersTimeout: 2_000, bodyTimeout: 2_000 });
  return postWebhook(agent, {
    origin,
    path: "/hook",
    headers: { "content-type": "application/json" },
    body: '{"type":"track"}',
    keepBytes: 1024,
    drainBytes: 64 * 1024,
    ...overrides,
  });
}

function fresh() {
  agent = new Agent({ headersTimeout: 300, bodyTimeout: 300 });
}

test("answers with the status, Retry-After (any case) and the body", async () => {
  fresh();
  handle = (req, res) => {
    expect(req.method).toBe("POST");
    res.writeHead(503, { "Retry-After": "120", "Content-Type": "text/plain" }).end("maintenance");
  };
  expect(await post()).toEqual({ statusCode: 503, retryAfter: "120", body: "maintenance" });
  handle = (_, res) => res.writeHead(204).end();
  expect(await post()).toEqual({ statusCode: 204, retryAfter: undefined, body: "" });
});

test("keeps the first keepBytes of a body sent in many chunks, and the connection for the next request", async () => {
  fresh();
  connections = 0;
  handle = (_, res) => {
    res.writeHead(200);
    for (let i = 0; i < 40; i++) res.write("0123456789abcdef".repeat(8)); // 40 × 128 bytes
    res.end();
  };
  const first = await post();
  expect(first.body).toHaveLength(1024);
  expect(first.body).toBe("0123456789abcdef".repeat(64));
  for (let i = 0; i < 20; i++) expect((await post()).statusCode).toBe(200);
  // Drained each time, so keep-alive connections are reused: undici opens a
  // second one on the second request (as it does for request()), then no more.
  expect(connections).toBeLessThanOrEqual(2);
});

test("past drainBytes the connection is dropped and the answer is what was kept", async () => {
  fresh();
  let closed = false;
  handle = (_, res) => {
    res.writeHead(200);
    res.socket!.once("close", () => (closed = true));
    const chunk = "x".repeat(16 * 1024);
    let sent = 0;
    const pump = () => {
      while (sent < 10 * 1024 * 1024 && res.write(chunk)) sent += chunk.length;
      if (sent < 10 * 1024 * 1024 && !res.destroyed) res.once("drain", pump);
    };
    res.on("error", () => {});
    pump();
  };
  const answer = await post({ drainBytes: 64 * 1024 });
  expect(answer.statusCode).toBe(200);
  expect(answer.body).toBe("x".repeat(1024));
  await expect.poll(() => closed).toBe(true);
  handle = (_, res) => res.end("ok");
  expect((await post()).body).toBe("ok");
});

test("an abort signal ends a request that is waiting for its answer, and one given already aborted", async () => {
  fresh();
  let arrived!: () => void;
  const requestArrived = new Promise<void>((resolve) => (arrived = resolve));
  handle = () => arrived(); // never answers
  const controller = new AbortController();
  const pending = post({ signal: controller.signal });
  await requestArrived;
  controller.abort(new Error("another URL succeeded"));
  await expect(pending).rejects.toThrow("another URL succeeded");
  await expect(post({ signal: AbortSignal.abort(new Error("too late")) })).rejects.toThrow("too late");
});

test("an endpoint that never answers fails with undici's headers timeout", async () => {
  fresh();
  handle = () => {}; // never answers
  await expect(post()).rejects.toMatchObject({ code: "UND_ERR_HEADERS_TIMEOUT" });
});

test("a refused connection fails with the socket's error code", async () => {
  fresh();
  const closedServer = createServer();
  closedServer.listen(0, "127.0.0.1");
  await once(closedServer, "listening");
  const port = (closedServer.address() as AddressInfo).port;
  closedServer.close();
  await once(closedServer, "close");
  await expect(post({ origin: `http://127.0.0.1:${port}` })).rejects.toMatchObject({ code: "ECONNREFUSED" });
});
