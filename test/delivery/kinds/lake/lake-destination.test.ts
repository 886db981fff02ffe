import { mkdtempSync, readdirSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { JsonObject } from "@bufbuild/protobuf";
import { expect } from "vitest";
import { DestinationKind, LakeFormat } from "../../../../gen/waypost/v1/destination_pb.js";
import { createObjectStore } from "../../../../src/lake/object-store.js";
import { downloadObjects, readLakeFiles } from "../../../helpers/duckdb-read.js";
import { cliEnv, waypost, waypostJson } from "../../../cli/support.js";
import { testWith } from "../../../helpers/fixtures.js";
import { useS3Server } from "../../../helpers/s3-server.js";
import type { TestServer } from "../../../helpers/server.js";

const test = testWith({ server: { config: { delivery: { pollIntervalMs: 100 } } } });
const lake = useS3Server(test, "waypost-lake-destination");

/** Every file under a directory, recursively, with its path relative to it. */
function filesUnder(directory: string): string[] {
  return (
    readdirSync(directory, { recursive: true, withFileTypes: true }) as Array<{ isFile(): boolean; parentPath: string; name: string }>
  )
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(directory, path.join(entry.parentPath, entry.name)))
    .sort();
}

async function lakeDestination(server: TestServer, lake: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const source = await server.createSource();
  const destination = await server.createDestination({
    name: "lake",
    sourceIds: [source.id],
    kind: DestinationKind.LAKE,
    lake: { flushSeconds: 1, ...lake },
    ...extra,
  });
  return { source, destination, client: server.tracking(source.writeKey) };
}

const track = (messageId: string, userId: string, properties: JsonObject) => ({
  type: { case: "track" as const, value: { messageId, userId, event: "Order Completed", properties } },
});

test("a lake in a directory gets every call once, as Parquet in the warehouse layout's tables, partitioned by hour", async ({ server }) => {
  const directory = mkdtempSync(path.join(lake.scratch, "dir-"));
  const { destination, client } = await lakeDestination(server, { url: pathToFileURL(directory).href });
  const layout = await server.pool.query("SELECT delivery_layout FROM destinations WHERE id = $1", [destination.id]);
  expect(layout.rows[0].delivery_layout).toBe("log");
  const ids = Array.from({ length: 40 }, (_, i) => `lake-${i}`);
  await client.batch({ batch: ids.map((id, i) => track(id, `u${i % 5}`, { total: i, coupon: i % 2 ? "X" : null })) });
  await client.identify({ identify: { messageId: "who", userId: "u1", traits: { plan: "pro" } } });
  await server.waypost.delivery!.settle();

  const files = filesUnder(directory);
  const hour = new Date().toISOString();
  const partition = `dt=${hour.slice(0, 10)}/hr=${hour.slice(11, 13)}`;
  for (const table of ["tracks", "order_completed", "identifies"]) {
    expect(files.some((f) => f.startsWith(`${table}/`) && f.endsWith(".parquet"))).toBe(true);
  }
  for (const file of files) expect(file).toMatch(/^[a-z_]+\/dt=\d{4}-\d{2}-\d{2}\/hr=\d{2}\/[0-9a-f]{32}\.parquet$/);
  expect(files.filter((f) => f.startsWith("tracks/")).every((f) => f.includes(partition))).toBe(true);

  const events = await readLakeFiles(
    files.filter((f) => f.startsWith("order_completed/")).map((f) => path.join(directory, f)),
    { orderBy: "id" },
  );
  expect(events.rows.map((r) => r.id)).toEqual([...ids].sort());
  expect(events.types.total).toBe("BIGINT");
  expect(events.types.received_at).toBe("TIMESTAMP WITH TIME ZONE");
  expect(events.rows.find((r) => r.id === "lake-3")).toMatchObject({ user_id: "u3", total: "3", coupon: "X", event: "order_completed" });
  const identifies = await readLakeFiles(files.filter((f) => f.startsWith("identifies/")).map((f) => path.join(directory, f)));
  expect(identifies.rows).toEqual([expect.objectContaining({ id: "who", user_id: "u1", plan: "pro" })]);

  // Delivered as the log delivers: one batch, each call once, shown as a per-call delivery is.
  const list = await server.deliveries.listDeliveries({ destinationId: destination.id, messageId: "lake-7" });
  expect(list.deliveries.map((d) => d.status)).toEqual([expect.anything()]);
  const detail = (await server.deliveries.getDelivery({ id: list.deliveries[0]!.id })).delivery!;
  expect(detail.attempts[0]!.url).toBe(pathToFileURL(directory).href);

  // The files written, as the console and the CLI show them: every row of every file, the last one by its key.
  const stats = await server.deliveries.getDestinationStats({ destinationId: destination.id });
  expect(stats.lakeFiles?.files).toBe(BigInt(files.length));
  expect(stats.lakeFiles?.rows).toBe(81n);
  expect(files).toContain(stats.lakeFiles?.lastFile);
  expect(stats.lakeFiles?.lastFileBytes).toBeGreaterThan(0n);
});

test("the CLI creates a lake and shows what it wrote", async ({ server }) => {
  const directory = mkdtempSync(path.join(lake.scratch, "cli-"));
  const source = await server.createSource();
  const env = cliEnv(server);
  const { destination: created } = await waypostJson<{
    destination: { id: string; lake: { url: string; format: string; flushSeconds: number } };
  }>(
    [
      "destinations",
      "create",
      "--name",
      "cli-lake",
      "--source",
      source.id,
      "--kind",
      "lake",
      "--lake-url",
      pathToFileURL(directory).href,
      "--lake-format",
      "ndjson-gz",
      "--flush-seconds",
      "1",
    ],
    env,
  );
  expect(created.lake).toMatchObject({ url: pathToFileURL(directory).href, format: "LAKE_FORMAT_NDJSON_GZ", flushSeconds: 1 });
  await server.tracking(source.writeKey).batch({ batch: [track("cli-1", "u", { n: 1 }), track("cli-2", "u", { n: 2 })] });
  await server.waypost.delivery!.settle();
  expect(filesUnder(directory).every((f) => f.endsWith(".ndjson.gz"))).toBe(true);
  const shown = await waypost(["stats", "--destination", created.id], env);
  expect(shown.code).toBe(0);
  expect(shown.stdout).toMatch(/files written: 2 \(4 rows, \d+ bytes\); last \S+\.ndjson\.gz \(2 rows, \d+ bytes\)/);
  const refused = await waypost(
    ["destinations", "create", "--name", "x", "--source", source.id, "--kind", "lake", "--lake-url", "s3://lake", "--lake-format", "csv"],
    env,
  );
  expect(refused.code).not.toBe(0);
  expect(refused.stderr).toContain('--lake-format: "csv" is not parquet or ndjson-gz');
});

test("an S3-compatible store gets the files through the AWS SDK, the secret masked everywhere, a 500 retried", async ({ server }) => {
  const { destination, client } = await lakeDestination(server, {
    url: "s3://lake/events/prod",
    endpoint: lake.s3.endpoint,
    accessKeyId: lake.s3.accessKeyId,
    secretAccessKey: lake.s3.secretAccessKey,
    format: LakeFormat.PARQUET,
  });
  expect(destination.lake).toMatchObject({ secretAccessKey: "***", hasSecretAccessKey: true, accessKeyId: lake.s3.accessKeyId });
  const read = await server.destinations.getDestination({ id: destination.id });
  expect(JSON.stringify(read.destination, (_key, value) => (typeof value === "bigint" ? String(value) : value))).not.toContain(
    lake.s3.secretAccessKey,
  );

  lake.s3.failNext(1, 500);
  await client.batch({ batch: Array.from({ length: 30 }, (_, i) => track(`s3-${i}`, "u", { n: i })) });
  await server.waypost.delivery!.settle();
  const store = createObjectStore({
    url: "s3://lake",
    endpoint: lake.s3.endpoint,
    accessKeyId: lake.s3.accessKeyId,
    secretAccessKey: lake.s3.secretAccessKey,
  });
  try {
    let keys = (await store.list("events/prod/")).map((o) => o.key);
    if (keys.filter((k) => k.includes("/order_completed/")).length === 0) {
      // The planted 500 failed the first flush: the cursor waits for its retry time; bring it forward.
      await server.pool.query("UPDATE log_cursors SET run_at = now() WHERE destination_id = $1", [destination.id]);
      server.waypost.delivery!.poke();
      await server.waypost.delivery!.settle();
      keys = (await store.list("events/prod/")).map((o) => o.key);
    }
    expect(lake.s3.requests.some((r) => r.refused === 500)).toBe(true);
    for (const key of keys) expect(key).toMatch(/^events\/prod\/[a-z_]+\/dt=\d{4}-\d{2}-\d{2}\/hr=\d{2}\/[0-9a-f]{32}\.parquet$/);
    const local = await downloadObjects(
      store,
      keys.filter((k) => k.includes("/order_completed/")),
      mkdtempSync(path.join(lake.scratch, "s3-")),
    );
    const back = await readLakeFiles(local, { orderBy: "id" });
    expect(back.rows.map((r) => r.id).sort()).toEqual(Array.from({ length: 30 }, (_, i) => `s3-${i}`).sort());
  } finally {
    await store.close();
  }
  const attempts = await server.pool.query("SELECT url, error FROM delivery_batch_attempts WHERE destination_id = $1", [destination.id]);
  expect(attempts.rows.length).toBeGreaterThan(0);
  expect(JSON.stringify(attempts.rows)).not.toContain(lake.s3.secretAccessKey);
});

test("the archive keeps every call as stored, before the destination's filter and transform", async ({ server }) => {
  const directory = mkdtempSync(path.join(lake.scratch, "archive-"));
  const { source, client } = await lakeDestination(
    server,
    { url: pathToFileURL(directory).href, archive: true, format: LakeFormat.NDJSON_GZ },
    { transform: "function transform(event) { return null; }" },
  );
  await client.batch({ batch: Array.from({ length: 12 }, (_, i) => track(`a-${i}`, "u", { i })) });
  await server.waypost.delivery!.settle();
  const files = filesUnder(directory);
  expect(files.length).toBeGreaterThan(0);
  for (const file of files) expect(file).toMatch(/^calls\/dt=[^/]+\/hr=\d{2}\/[0-9a-f]{32}\.ndjson\.gz$/);
  const back = await readLakeFiles(
    files.map((f) => path.join(directory, f)),
    { orderBy: "message_id" },
  );
  expect(back.rows.map((r) => r.message_id)).toEqual(Array.from({ length: 12 }, (_, i) => `a-${i}`).sort());
  const stored = await server.pool.query<{ payload: string }>("SELECT payload FROM messages WHERE message_id = 'a-3'");
  const row = back.rows.find((r) => r.message_id === "a-3")!;
  expect(row.source_id).toBe(source.id);
  expect(JSON.parse(String(row.call))).toEqual(JSON.parse(stored.rows[0]!.payload));
});
