import net from "node:net";
import { afterAll, beforeAll, expect, test } from "vitest";
import { closePool, createPool } from "../../src/db/pool.js";
import { serverUrl } from "../helpers/database.js";

// Shutdown closes the pools, then stops the embedded Postgres: every backend
// must be gone by then, or Postgres terminates it and the client reports a
// failed connection (57P01) in the middle of a clean stop.

/**
 * A proxy in front of Postgres that, once told to, holds what clients send
 * (their Terminate messages) until released: the server then still has
 * each backend, as it would for a moment on a busy machine.
 */
async function startHoldingProxy(target: URL) {
  let holding = false;
  const held: { upstream: net.Socket; data: Buffer }[] = [];
  const sockets = new Set<net.Socket>();
  let onHeld = () => {};
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => {});
    }
    client.on("data", (data) => {
      if (!holding) upstream.write(data);
      else {
        held.push({ upstream, data });
        onHeld();
      }
    });
    upstream.pipe(client);
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    /** Holds from now on; resolves once `count` messages are held. */
    hold(count: number): Promise<void> {
      holding = true;
      return new Promise((resolve) => {
        onHeld = () => held.length >= count && resolve();
      });
    },
    release() {
      holding = false;
      for (const { upstream, data } of held.splice(0)) upstream.write(data);
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let proxy: Awaited<ReturnType<typeof startHoldingProxy>>;

beforeAll(async () => {
  proxy = await startHoldingProxy(new URL(serverUrl()));
});

afterAll(async () => {
  await proxy?.close();
});

test("closePool returns only once every connection has closed, not when it has asked them to", async () => {
  const url = new URL(serverUrl());
  url.hostname = "127.0.0.1";
  url.port = String(proxy.port);
  const pool = createPool({ connectionString: url.toString(), max: 4 });
  const clients = await Promise.all(Array.from({ length: 4 }, () => pool.connect()));
  await Promise.all(clients.map((client) => client.query("SELECT 1")));
  for (const client of clients) client.release();

  // Each connection's Terminate message is held before it reaches Postgres.
  const terminatesHeld = proxy.hold(4);
  let closed = false;
  const closing = closePool(pool).then(() => (closed = true));
  await terminatesHeld;
  // Give a pool that resolves early every chance to do so.
  await new Promise((resolve) => setImmediate(resolve));
  expect(closed).toBe(false);

  proxy.release();
  await closing;
  expect(closed).toBe(true);
});
