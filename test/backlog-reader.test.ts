import net from "node:net";
import { PassThrough } from "node:stream";
import { expect } from "vitest";
import { createBacklogReader } from "../src/backlog-reader.js";
import { singleNodeJobTable } from "../src/db/job-table/index.js";
import { createPool } from "../src/db/pool.js";
import { createLogger } from "../src/logger.js";
import { testWith } from "./helpers/fixtures.js";
import { ManualClock } from "./helpers/server.js";

// An API-only process claims nothing: what is ingested stays pending, the
// backlog the gauge must show.
const test = testWith({ server: { config: { role: "api" } } });
let writeKey: string;
const ids: Record<"busy" | "quiet" | "idle", string> = { busy: "", quiet: "", idle: "" };

test.beforeAll(async ({ server }) => {
  const source = await server.createSource();
  const other = await server.createSource("other");
  writeKey = source.writeKey;
  ids.busy = (
    await server.createDestination({ name: "busy", sourceIds: [source.id], enabled: true, webhooks: [{ url: "https://a.example.com/" }] })
  ).id;
  ids.quiet = (
    await server.createDestination({ name: "quiet", sourceIds: [source.id], enabled: true, webhooks: [{ url: "https://b.example.com/" }] })
  ).id;
  ids.idle = (
    await server.createDestination({ name: "idle", sourceIds: [other.id], enabled: true, webhooks: [{ url: "https://c.example.com/" }] })
  ).id;
  const tracking = server.tracking(writeKey);
  await tracking.batch({ batch: [1, 2, 3].map((n) => ({ type: { case: "track" as const, value: { userId: `u${n}`, event: "E" } } })) });
});

/** waypost_destination_backlog samples of a /metrics text, by destination id. */
function backlogSamples(text: string): Record<string, number> {
  return Object.fromEntries(
    [...text.matchAll(/^waypost_destination_backlog\{destination_id="([^"]+)"\} (\d+)$/gm)].map((m) => [m[1]!, Number(m[2])]),
  );
}

test("/metrics has each destination's unfinished deliveries, 0 for one without any", async ({ server }) => {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  expect(text).toContain("# TYPE waypost_destination_backlog gauge");
  expect(backlogSamples(text)).toEqual({ [ids.busy]: 3, [ids.quiet]: 3, [ids.idle]: 0 });
});

test("a count is reused while younger than maxAgeMs, then read again", async ({ server }) => {
  const clock = new ManualClock();
  const reader = createBacklogReader({
    pool: server.pool,
    jobTable: singleNodeJobTable,
    clock,
    logger: createLogger("silent"),
    maxAgeMs: 5_000,
  });
  const [first, concurrent] = await Promise.all([reader.read(), reader.read()]);
  expect(first?.get(ids.busy)).toBe(3);
  // Concurrent scrapes share one query.
  expect(concurrent).toBe(first);
  await server.tracking(writeKey).track({ track: { userId: "u4", event: "E" } });
  clock.advance(4_999);
  expect((await reader.read())?.get(ids.busy)).toBe(3);
  clock.advance(1);
  expect((await reader.read())?.get(ids.busy)).toBe(4);
});

test("a database that does not answer leaves the gauge out and is logged; the scrape still succeeds", async () => {
  const closed = net.createServer();
  await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const port = (closed.address() as net.AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  const pool = createPool({ connectionString: `postgres://postgres@127.0.0.1:${port}/none` });
  const logs = new PassThrough();
  let logged = "";
  logs.on("data", (chunk: Buffer) => (logged += chunk.toString()));
  const reader = createBacklogReader({ pool, jobTable: singleNodeJobTable, clock: new ManualClock(), logger: createLogger("warn", logs) });
  try {
    expect(await reader.read()).toBeUndefined();
    expect(logged).toContain("could not count the delivery backlog for /metrics");
    expect(logged).toContain("ECONNREFUSED");
  } finally {
    await pool.end();
  }
});
