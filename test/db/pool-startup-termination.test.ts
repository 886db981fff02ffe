import net from "node:net";
import pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createPool, withTransaction } from "../../src/db/pool.js";
import { serverUrl } from "../helpers/database.js";

// A backend terminated as it starts (a Postgres restart, an operator's
// pg_terminate_backend) can send its ReadyForQuery and its FATAL error in one
// packet. pg-pool hands the connection to `pool.connect()`'s caller on the
// first and the client emits the second before that caller can listen: with
// nobody listening, the error event ended the process. Real Postgres sends
// them in one packet only by chance, so a proxy in front of it holds the
// startup reply, terminates the backend (its pid is in the reply), and
// passes the reply and the FATAL on together.

/** The complete server messages at the start of a buffer (type, body, and the message's bytes), and the bytes left over. */
function messages(buffer: Buffer): { found: Array<{ type: string; body: Buffer; raw: Buffer }>; rest: Buffer } {
  const found: Array<{ type: string; body: Buffer; raw: Buffer }> = [];
  let offset = 0;
  while (buffer.length - offset >= 5) {
    const length = buffer.readInt32BE(offset + 1);
    if (buffer.length - offset < 1 + length) break;
    const raw = buffer.subarray(offset, offset + 1 + length);
    found.push({ type: String.fromCharCode(raw[0]!), body: raw.subarray(5), raw });
    offset += 1 + length;
  }
  return { found, rest: buffer.subarray(offset) };
}

async function startCoalescingProxy(target: URL, terminate: (pid: number) => Promise<void>) {
  let coalesced = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => sockets.delete(socket));
    }
    client.on("data", (data) => upstream.write(data));
    client.on("end", () => upstream.end());
    // Authentication passes through (a password exchange needs the client's answers); from
    // AuthenticationOk on, the startup reply is held until the backend's FATAL joins it.
    let unread: Buffer = Buffer.alloc(0);
    const held: Buffer[] = [];
    let state: "authenticating" | "holding" | "terminating" | "passing" = "authenticating";
    let pid = 0;
    upstream.on("data", (data) => {
      if (state === "passing") return client.write(data);
      const { found, rest } = messages(Buffer.concat([unread, data]));
      unread = rest;
      for (const { type, body, raw } of found) {
        if (state === "passing") {
          client.write(raw);
          continue;
        }
        if (state === "authenticating" && !(type === "R" && body.readInt32BE(0) === 0)) {
          client.write(raw);
          continue;
        }
        if (state === "authenticating") state = "holding";
        held.push(raw);
        if (type === "K") pid = body.readInt32BE(0);
        if (type === "Z" && state === "holding") {
          state = "terminating";
          void terminate(pid);
        } else if (type === "E" && state === "terminating") {
          // The startup reply and the FATAL, in one write.
          state = "passing";
          coalesced++;
          client.write(Buffer.concat(held));
        }
      }
      if (state === "passing" && unread.length > 0) {
        client.write(unread);
        unread = Buffer.alloc(0);
      }
    });
    upstream.on("end", () => client.end());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: (() => {
      const url = new URL(target.href);
      url.host = `127.0.0.1:${port}`;
      return url.href;
    })(),
    /** Connections whose startup reply and FATAL went out in one write. */
    coalesced: () => coalesced,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let admin: pg.Pool;
let proxy: Awaited<ReturnType<typeof startCoalescingProxy>>;

beforeAll(async () => {
  const url = new URL(serverUrl());
  admin = new pg.Pool({ connectionString: url.href, max: 1 });
  proxy = await startCoalescingProxy(url, async (pid) => {
    await admin.query("SELECT pg_terminate_backend($1)", [pid]);
  });
});

afterAll(async () => {
  await proxy?.close();
  await admin?.end();
});

test("a connection terminated as it starts fails the transaction that took it, not the process", async () => {
  const pool = createPool({ connectionString: proxy.url, max: 1 });
  try {
    const failure = await withTransaction(pool, (tx) => tx.query("SELECT 1")).then(
      () => undefined,
      (error: Error) => error,
    );
    expect(proxy.coalesced()).toBe(1);
    expect(failure?.message).toMatch(/terminating connection|not queryable|Connection terminated/);
    // The broken connection was discarded: the pool has none left over.
    expect(pool.totalCount).toBe(0);
  } finally {
    await pool.end();
  }
});
