import { randomBytes } from "node:crypto";
import { EventEmitter, once } from "node:events";
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterEach, expect, test } from "vitest";
import type { DeliveryCompletion } from "../../src/db/job-table/index.js";
import { createAddressGuard } from "../../src/outbound/address-guard.js";
import { createDestinationDispatchers } from "../../src/delivery/destination-dispatchers.js";
import { startReceiver, type Receiver, type Responder } from "../helpers/receiver.js";
import { completionsOf, startTestServer, type TestServer } from "../helpers/server.js";
import { verifyStandardWebhook } from "../helpers/standard-webhooks.js";

// Pipelining queues a POST on a connection whose request is still running
// (once its answer's headers are in); the per-destination clients keep one
// destination's stalled endpoint from holding another destination's
// webhooks, even on the same origin.

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function server(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const s = await startTestServer(options);
  cleanups.push(() => s.stop());
  return s;
}

async function receiver(respond?: Responder): Promise<Receiver> {
  const r = await startReceiver({ respond });
  cleanups.push(() => r.close());
  return r;
}

/** Rejects after `ms` with `message()`: the bound a promise must beat. */
function within<T>(promise: Promise<T>, ms: number, message: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message())), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** A loopback HTTP server that answers 200 (or holds a request until told) and shows its client sockets. */
async function startSocketServer() {
  const sockets = new Set<Socket>();
  const socketOfPath = new Map<string, Socket>();
  const held: Array<() => void> = [];
  const arrivals = new EventEmitter();
  const httpServer = http.createServer((req, res) => {
    socketOfPath.set(req.url ?? "", req.socket);
    req.resume();
    req.on("end", () => {
      const answer = () => res.end("ok");
      if (req.url?.startsWith("/held")) held.push(answer);
      else answer();
      arrivals.emit("request");
    });
  });
  httpServer.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  httpServer.listen(0, "127.0.0.1");
  await once(httpServer, "listening");
  const { port } = httpServer.address() as AddressInfo;
  const s = {
    origin: `http://127.0.0.1:${port}`,
    port,
    sockets,
    socketOfPath,
    held,
    /** Resolves once `count` requests are held. */
    async waitHeld(count: number) {
      while (held.length < count) await once(arrivals, "request");
    },
    closed: (socket: Socket) => (socket.destroyed ? Promise.resolve() : once(socket, "close").then(() => undefined)),
    /** Resolves once no client holds a connection to it. */
    async allClosed() {
      await Promise.all([...sockets].map((socket) => s.closed(socket)));
    },
  };
  cleanups.push(async () => {
    httpServer.closeAllConnections();
    await new Promise((resolve) => httpServer.close(resolve));
  });
  return s;
}

test("hanging paths and a healthy path on one origin: the healthy destination's webhooks complete while the hanging ones are open", async () => {
  // The endpoint timeout is far beyond the bound below: a healthy POST
  // queued behind a hanging one would wait 30 s.
  const s = await server({ config: { delivery: { timeoutMs: 30_000, pipelining: 2 } } });
  // /hang never answers; /stall sends its headers and then nothing. undici
  // queues the next request on a connection once the answer's headers are
  // in, so it is the stalled body that would hold a request queued behind it.
  const r = await receiver((request) =>
    request.path === "/hang" ? { hang: true } : request.path === "/stall" ? { stall: true } : { status: 200 },
  );
  const origin = new URL(r.url).origin;
  const stuckSource = await s.createSource("stuck");
  const okSource = await s.createSource("ok");
  const stuck = [
    await s.createDestination({ name: "hanging", sourceIds: [stuckSource.id], webhooks: [{ url: `${origin}/hang` }] }),
    await s.createDestination({ name: "stalled", sourceIds: [stuckSource.id], webhooks: [{ url: `${origin}/stall` }] }),
  ];
  const healthy = await s.createDestination({ name: "healthy", sourceIds: [okSource.id], webhooks: [{ url: `${origin}/ok` }] });
  const stuckDone: DeliveryCompletion[] = [];
  s.waypost.delivery!.events.on("completed", (completions) =>
    stuckDone.push(...completions.filter((c) => stuck.some((d) => d.id === c.destinationId))),
  );

  // The stuck destinations' requests run first, each on a connection with room for one more.
  await s.tracking(stuckSource.writeKey).track({ track: { userId: "u", event: "stuck" } });
  await r.waitForRequests(2);

  const n = 40;
  const done = completionsOf(s, healthy.id, n);
  const calls = Array.from({ length: n }, (_, i) => ({ type: { case: "track" as const, value: { userId: "u", event: `ok ${i}` } } }));
  expect((await s.tracking(okSource.writeKey).batch({ batch: calls })).accepted).toBe(n);
  const completions = await within(done, 10_000, () => {
    const arrived = r.requests.filter((q) => q.path === "/ok").length;
    return `healthy webhooks held behind the stuck ones: ${arrived} of ${n} arrived in 10 s`;
  });

  expect(completions.map((c) => c.status)).toEqual(Array(n).fill("delivered"));
  const events = r.requests.filter((q) => q.path === "/ok").map((q) => JSON.parse(q.body).event);
  expect(new Set(events).size).toBe(n);
  expect(events).toHaveLength(n);
  // All of it while the stuck requests are still open.
  expect(
    r.requests
      .filter((q) => q.path !== "/ok")
      .map((q) => q.path)
      .sort(),
  ).toEqual(["/hang", "/stall"]);
  expect(stuckDone).toEqual([]);
}, 60_000);

test.each([2, 4])(
  "many webhooks to one destination with pipelining %i: each arrives once, signed, its attempt recorded",
  async (pipelining) => {
    const s = await server({ config: { delivery: { pipelining } } });
    const r = await receiver();
    const secret = `whsec_${randomBytes(32).toString("base64")}`;
    const source = await s.createSource();
    const destination = await s.createDestination({
      name: "busy",
      sourceIds: [source.id],
      webhooks: [{ url: r.url }],
      signingSecrets: [secret],
    });
    const n = 300;
    const done = completionsOf(s, destination.id, n);
    const client = s.tracking(source.writeKey);
    for (let i = 0; i < n; i += 100) {
      const calls = Array.from({ length: 100 }, (_, j) => ({
        type: { case: "track" as const, value: { userId: `u${i + j}`, event: `e${i + j}` } },
      }));
      expect((await client.batch({ batch: calls })).accepted).toBe(100);
    }
    const completions = await done;
    expect(completions.map((c) => c.status)).toEqual(Array(n).fill("delivered"));
    expect(r.requests).toHaveLength(n);
    const ids = r.requests.map((q) => {
      verifyStandardWebhook(secret, q, new Date());
      return JSON.parse(q.body).messageId as string;
    });
    expect(new Set(ids).size).toBe(n);
    const attempts = await s.pool.query(
      `SELECT a.outcome, a.status_code, count(*)::int AS n FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
      WHERE d.destination_id = $1 GROUP BY 1, 2`,
      [destination.id],
    );
    expect(attempts.rows).toEqual([{ outcome: "success", status_code: 200, n }]);
  },
  60_000,
);

test("stop() closes every destination's connections", async () => {
  const s = await server();
  const sink = await startSocketServer();
  const source = await s.createSource();
  await s.createDestination({ name: "a", sourceIds: [source.id], webhooks: [{ url: `${sink.origin}/a` }] });
  await s.createDestination({ name: "b", sourceIds: [source.id], webhooks: [{ url: `${sink.origin}/b` }] });
  const done = s.waitForDeliveries(2);
  await s.tracking(source.writeKey).track({ track: { userId: "u", event: "E" } });
  expect((await done).map((c) => c.status)).toEqual(["delivered", "delivered"]);
  // One keep-alive connection per destination, even on one origin.
  expect(sink.socketOfPath.get("/a")).not.toBe(sink.socketOfPath.get("/b"));
  expect(sink.sockets.size).toBe(2);
  await s.stopService();
  await within(sink.allClosed(), 5_000, () => `${sink.sockets.size} connections left open after stop()`);
});

test("a destination idle past idleMs loses its client (its connections close); one in use or recently used keeps it", async () => {
  const sink = await startSocketServer();
  let nowMs = 1_000_000;
  const dispatchers = createDestinationDispatchers({
    guard: createAddressGuard({ allowPrivate: true, allowedCidrs: [] }),
    timeoutMs: 5_000,
    pipelining: 2,
    connectionsPerOrigin: 4,
    idleMs: 60_000,
    now: () => nowMs,
  });
  cleanups.push(() => dispatchers.close());
  const post = (destinationId: string, path: string) =>
    dispatchers.use(destinationId, async (d) => {
      const response = await d.request({ origin: sink.origin, path, method: "POST", body: "{}" });
      await response.body.text();
      return response.statusCode;
    });

  expect(await post("a", "/a")).toBe(200);
  expect(await post("b", "/b")).toBe(200);
  expect(dispatchers.size).toBe(2);
  const socketA = sink.socketOfPath.get("/a")!;
  const socketB = sink.socketOfPath.get("/b")!;
  expect(socketA).not.toBe(socketB);

  // c's request is in flight across the whole idle time.
  const inFlight = post("c", "/held");
  await sink.waitHeld(1);
  nowMs += 30_000;
  expect(await post("b", "/b")).toBe(200);
  nowMs += 40_000;
  // a: idle 70 s; b: 40 s; c: in flight.
  expect(dispatchers.sweep()).toBe(1);
  expect(dispatchers.size).toBe(2);
  await within(sink.closed(socketA), 5_000, () => "the idle destination's connection stayed open");
  expect(socketB.destroyed).toBe(false);

  // Used again, it gets a new client.
  expect(await post("a", "/a2")).toBe(200);
  expect(dispatchers.size).toBe(3);
  expect(sink.socketOfPath.get("/a2")).not.toBe(socketA);

  for (const answer of sink.held.splice(0)) answer();
  expect(await inFlight).toBe(200);
  await dispatchers.close();
  expect(dispatchers.size).toBe(0);
  await within(sink.allClosed(), 5_000, () => `${sink.sockets.size} connections left open after close()`);
  await expect(post("a", "/a")).rejects.toThrow(/closed/);
});

test("each destination's client runs the SSRF guard: a name resolving to loopback is refused before any connection", async () => {
  const sink = await startSocketServer();
  const dispatchers = createDestinationDispatchers({
    guard: createAddressGuard({ allowPrivate: false, allowedCidrs: [] }),
    timeoutMs: 5_000,
    pipelining: 2,
    connectionsPerOrigin: 4,
  });
  cleanups.push(() => dispatchers.close());
  for (const id of ["a", "b"]) {
    const refused = dispatchers.use(id, (d) =>
      d.request({ origin: `http://localhost:${sink.port}`, path: "/", method: "POST", body: "{}" }),
    );
    await expect(refused).rejects.toMatchObject({ code: "EWAYPOST_REFUSED_ADDRESS" });
  }
  expect(sink.socketOfPath.size).toBe(0);
  expect(sink.sockets.size).toBe(0);
});
