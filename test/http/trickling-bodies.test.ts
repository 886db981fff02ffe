import http from "node:http";
import net from "node:net";
import { afterAll, expect } from "vitest";
import { defaultConnectionLimits } from "../../src/http/connection-limits.js";
import type { RouteHandler } from "../../src/http/types.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";

/**
 * One client, one address, no credentials: it fills the connection cap
 * with /v1/batch requests whose bodies trickle in (the write key would be
 * in the body, so the body is being read). The service must keep
 * answering /readyz and real tracking calls on new connections.
 */

const cap = 200;
const test = testWith({
  server: {
    routes: (defaults) => [probe, ...defaults],
    config: {
      // Long stall and request timeouts: only the cap decides who stays.
      connections: { ...defaultConnectionLimits, maxConnections: cap, bodyStallTimeoutMs: 120_000, requestTimeoutMs: 120_000 },
      bodies: { deadlineMs: 120_000, minBytesPerSecond: 0, rateGraceMs: 0 },
    },
  },
});
let writeKey: string;
const attackers: net.Socket[] = [];
let trickle: NodeJS.Timeout | undefined;

test.beforeAll(async ({ server }) => {
  writeKey = (await server.createSource()).writeKey;
});
afterAll(async () => {
  clearInterval(trickle);
  for (const socket of attackers) socket.destroy();
});

/** Sees each trickling request begin (the server is reading its body), then lets the real routes answer it. */
let onProbe: () => void = () => {};
const probe: RouteHandler = async (req, _res, path) => {
  if (path === "/v1/batch" && req.headers["x-probe"] === "trickle") onProbe();
  return false;
};

/** One request on a connection of its own (no keep-alive agent). */
function requestOnNewConnection(server: TestServer, path: string, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, server.url);
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: body === undefined ? "GET" : "POST",
        headers: body === undefined ? {} : { "content-type": "application/json" },
        agent: false,
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

test("connections trickling /v1/batch bodies up to the cap do not lock out /readyz or tracking calls", async ({ server }) => {
  // Counts trickling connections settled: their request has begun (the
  // server is reading its body), or they were closed.
  let settled = 0;
  let onSettled: () => void = () => {};
  const settledUpTo = (count: number) =>
    new Promise<void>((resolve) => {
      onSettled = () => settled >= count && resolve();
      onSettled();
    });
  onProbe = () => {
    settled++;
    onSettled();
  };

  const headers =
    "POST /v1/batch HTTP/1.1\r\nHost: x\r\nX-Probe: trickle\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{";
  const open = (count: number) => {
    for (let i = 0; i < count; i++) {
      const socket = net.connect(Number(new URL(server.url).port), "127.0.0.1", () => socket.write(headers));
      socket.on("error", () => {});
      socket.once("close", () => {
        settled++;
        onSettled();
      });
      attackers.push(socket);
    }
  };
  // The cap's worth, then more once those are all sending bodies: every slot ends up trickling.
  open(cap);
  await settledUpTo(cap);
  open(20);
  await settledUpTo(cap + 20);
  // One more body byte now and then, as the slow client would.
  trickle = setInterval(() => {
    for (const socket of attackers) if (!socket.destroyed) socket.write(" ");
  }, 1_000);

  const legit: Array<{ status: number; body: string }> = [];
  for (let round = 0; round < 3; round++) {
    legit.push(await requestOnNewConnection(server, "/readyz"));
    legit.push(
      await requestOnNewConnection(
        server,
        "/v1/track",
        JSON.stringify({ writeKey, userId: `u${round}`, event: "Trickle Probe", messageId: `trickle-${round}` }),
      ),
    );
  }
  expect(legit).toEqual([
    { status: 200, body: "ready\n" },
    { status: 200, body: '{"success":true}' },
    { status: 200, body: "ready\n" },
    { status: 200, body: '{"success":true}' },
    { status: 200, body: "ready\n" },
    { status: 200, body: '{"success":true}' },
  ]);
  const stored = await server.pool.query("SELECT count(*)::int AS n FROM messages WHERE message_id LIKE 'trickle-%'");
  expect(stored.rows[0].n).toBe(3);
  // Room was made one trickling connection at a time: the rest are still held.
  const held = attackers.filter((socket) => !socket.destroyed && !socket.closed).length;
  expect(held).toBeGreaterThanOrEqual(cap - legit.length - 1);
}, 60_000);
