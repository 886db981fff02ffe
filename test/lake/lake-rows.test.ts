import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { createMemoryColumnRegistry } from "../../src/lake/column-registry.js";
import { rowsOf } from "../../src/lake/file-content.js";
import { createFileWriter } from "../../src/lake/file-writer.js";
import { type LakeCall, lakeRows, type TableBatch } from "../../src/lake/lake-rows.js";
import { utcTimestamp } from "../../src/lake/lake-types.js";
import { batchFileName, objectKey, partitionOf } from "../../src/lake/object-keys.js";
import { readLakeFiles } from "../helpers/duckdb-read.js";

const scratch = mkdtempSync(path.join(tmpdir(), "waypost-lake-rows-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const receivedAt = new Date("2026-11-22T10:04:05.000Z");
const call = (body: Record<string, unknown>, at = receivedAt): LakeCall => ({
  payload: JSON.stringify(body),
  receivedAt: at,
  sourceId: "src-1",
});
const base = { version: 1, context: { ip: "203.0.113.9", library: { name: "analytics.js" } }, timestamp: "2026-11-22T10:04:00.000Z" };

const byTable = (batches: TableBatch[]) => new Map(batches.map((b) => [b.table, b]));

describe("lake rows", () => {
  test("each call type lands in the layout's tables, with warehouse column names, and in the archive", async () => {
    const calls = [
      call({
        ...base,
        type: "track",
        messageId: "m1",
        userId: "u1",
        event: "Order Completed",
        properties: { orderId: "o-1", total: 42.5, items: 3 },
      }),
      call({ ...base, type: "identify", messageId: "m2", userId: "u1", traits: { email: "a@example.com", plan: "pro" } }),
      call({ ...base, type: "page", messageId: "m3", anonymousId: "an-1", name: "Home", category: "Docs", properties: { path: "/" } }),
      call({ ...base, type: "screen", messageId: "m4", userId: "u2", name: "Settings", properties: { tabCount: 2 } }),
      call({ ...base, type: "group", messageId: "m5", userId: "u1", groupId: "g1", traits: { employeeCount: 40 } }),
      call({ ...base, type: "alias", messageId: "m6", "User ID": "u3", "Previous ID": "an-1" }),
    ];
    const result = await lakeRows(calls, createMemoryColumnRegistry(), { loadedAt: new Date("2026-11-22T10:05:00.000Z") });
    expect(result.skipped).toEqual([]);
    expect(result.discarded).toEqual([0, 0, 0, 0, 0, 0]);
    const tables = byTable(result.batches);
    expect([...tables.keys()].sort()).toEqual([
      "aliases",
      "calls",
      "groups",
      "identifies",
      "order_completed",
      "pages",
      "screens",
      "tracks",
    ]);
    // No `users` table: a lake is only appended to.
    expect(tables.has("users")).toBe(false);

    const event = tables.get("order_completed")!;
    expect(event.partition).toEqual({ dt: "2026-11-22", hr: "10" });
    expect(Object.fromEntries(event.columns)).toMatchObject({
      id: "text",
      received_at: "timestamp",
      user_id: "text",
      event: "text",
      event_text: "text",
      context_ip: "text",
      context_library_name: "text",
      order_id: "text",
      total: "double",
      items: "bigint",
    });
    expect(Object.fromEntries(rowsOf(event)[0]!)).toMatchObject({
      id: "m1",
      received_at: "2026-11-22T10:04:05.000Z",
      loaded_at: "2026-11-22T10:05:00.000Z",
      event: "order_completed",
      event_text: "Order Completed",
      order_id: "o-1",
      total: 42.5,
      items: 3,
    });
    expect(rowsOf(tables.get("tracks")!)[0]!.get("order_id")).toBeUndefined();
    expect(Object.fromEntries(rowsOf(tables.get("identifies")!)[0]!)).toMatchObject({
      id: "m2",
      user_id: "u1",
      email: "a@example.com",
      plan: "pro",
    });
    expect(Object.fromEntries(rowsOf(tables.get("pages")!)[0]!)).toMatchObject({
      name: "Home",
      category: "Docs",
      path: "/",
      anonymous_id: "an-1",
    });
    expect(Object.fromEntries(rowsOf(tables.get("screens")!)[0]!)).toMatchObject({ name: "Settings", tab_count: 2 });
    expect(Object.fromEntries(rowsOf(tables.get("groups")!)[0]!)).toMatchObject({ group_id: "g1", employee_count: 40 });
    expect(Object.fromEntries(rowsOf(tables.get("aliases")!)[0]!)).toMatchObject({ user_id: "u3", previous_id: "an-1" });

    const archive = tables.get("calls")!;
    expect([...archive.columns.keys()]).toEqual(["message_id", "source_id", "type", "received_at", "user_id", "anonymous_id", "call"]);
    expect(rowsOf(archive).map((r) => r.get("type"))).toEqual(["track", "identify", "page", "screen", "group", "alias"]);
    expect(rowsOf(archive)[5]!.get("user_id")).toBe("u3");
    expect(rowsOf(archive)[0]!.get("call")).toBe(calls[0]!.payload);
    expect(rowsOf(archive)[0]!.get("source_id")).toBe("src-1");
  });

  test("the first type seen for a column wins across batches; a value that does not fit is null and counted", async () => {
    const registry = createMemoryColumnRegistry();
    const first = await lakeRows(
      [call({ ...base, type: "track", messageId: "a", userId: "u", event: "Signed Up", properties: { plan: "pro", seats: 3 } })],
      registry,
    );
    expect(first.discarded).toEqual([0]);
    const second = await lakeRows(
      [
        call({ ...base, type: "track", messageId: "b", userId: "u", event: "Signed Up", properties: { plan: 7, seats: "many" } }),
        call({ ...base, type: "track", messageId: "c", userId: "u", event: "Signed Up", properties: { plan: "team", seats: 1.5 } }),
      ],
      registry,
    );
    const table = byTable(second.batches).get("signed_up")!;
    expect(table.columns.get("seats")).toBe("bigint");
    // A number fits a text column (as text); a word and a fraction do not fit bigint.
    expect(rowsOf(table).map((r) => [r.get("plan"), r.get("seats")])).toEqual([
      ["7", null],
      ["team", null],
    ]);
    expect(second.discarded).toEqual([1, 1]);
    expect(Object.fromEntries(await registry.columns("signed_up"))).toMatchObject({ plan: "text", seats: "bigint" });
  });

  test("rows are split by the hour they were received in (UTC); unusable calls are skipped with a reason", async () => {
    const result = await lakeRows(
      [
        call({ ...base, type: "track", messageId: "a", userId: "u", event: "E" }, new Date("2026-11-22T23:59:59.999Z")),
        call({ ...base, type: "track", messageId: "b", userId: "u", event: "E" }, new Date("2026-11-23T00:00:00.000Z")),
        { payload: "not json", receivedAt },
        call({ type: "delete", userId: "u" }),
        call({ ...base, type: "track", userId: "u", event: "no id" }),
      ],
      createMemoryColumnRegistry(),
    );
    const eventFiles = result.batches.filter((b) => b.table === "e").map((b) => `${b.partition.dt}/${b.partition.hr}:${b.rowCount}`);
    expect(eventFiles).toEqual(["2026-11-22/23:1", "2026-11-23/00:1"]);
    expect(result.skipped.map((s) => s.index)).toEqual([2, 3, 4]);
    expect(result.skipped[0]!.reason).toContain("not JSON");
  });

  test("an event named Calls does not write into the archive table", async () => {
    const result = await lakeRows(
      [call({ ...base, type: "track", messageId: "a", userId: "u", event: "Calls" })],
      createMemoryColumnRegistry(),
    );
    const tables = byTable(result.batches);
    expect(tables.get("_calls")?.rowCount).toBe(1);
    expect(rowsOf(tables.get("calls")!).map((r) => r.get("message_id"))).toEqual(["a"]);
  });

  test("timestamps with offsets and long fractions are stored in UTC, to the microsecond", () => {
    expect(utcTimestamp("2026-11-22T10:04:05.123Z")).toBe("2026-11-22T10:04:05.123Z");
    expect(utcTimestamp("2026-11-22T12:04:05+02:00")).toBe("2026-11-22T10:04:05.000Z");
    expect(utcTimestamp("2026-11-22 01:30-0130")).toBe("2026-11-22T03:00:00.000Z");
    expect(utcTimestamp("2026-11-22T10:04:05.123456789Z")).toBe("2026-11-22T10:04:05.123456Z");
    expect(utcTimestamp("0099-01-01T00:00:00Z")).toBe("0099-01-01T00:00:00.000Z");
  });

  test("two files of one table with different columns read back together by name", async () => {
    const registry = createMemoryColumnRegistry();
    const writer = createFileWriter({ format: "parquet" });
    try {
      const files: string[] = [];
      const batches = [
        [call({ ...base, type: "track", messageId: "a", userId: "u", event: "Viewed", properties: { color: "red", size: 1 } })],
        [call({ ...base, type: "track", messageId: "b", userId: "u", event: "Viewed", properties: { size: 2, discount: 0.5 } })],
      ];
      for (const [i, batch] of batches.entries()) {
        const table = byTable((await lakeRows(batch, registry)).batches).get("viewed")!;
        const file = path.join(scratch, `viewed-${i}.parquet`);
        await writer.write(table, file);
        files.push(file);
      }
      const back = await readLakeFiles(files, { orderBy: "id" });
      expect(back.types).toMatchObject({ color: "VARCHAR", size: "BIGINT", discount: "DOUBLE", received_at: "TIMESTAMP WITH TIME ZONE" });
      expect(back.rows.map((r) => [r.id, r.color, r.size, r.discount])).toEqual([
        ["a", "red", "1", null],
        ["b", null, "2", 0.5],
      ]);
    } finally {
      await writer.close();
    }
  });
});

describe("object keys", () => {
  test("<prefix>/<table>/dt=YYYY-MM-DD/hr=HH/<name>.<ext>, partitioned in UTC", () => {
    const partition = partitionOf(new Date("2026-03-01T00:30:00+01:00"));
    expect(partition).toEqual({ dt: "2026-02-28", hr: "23" });
    expect(objectKey("raw/waypost/", "tracks", partition, batchFileName(12n, 345n), "parquet")).toBe(
      "raw/waypost/tracks/dt=2026-02-28/hr=23/00000000000000000012-00000000000000000345.parquet",
    );
    expect(objectKey("", "calls", { dt: "2026-01-02", hr: "07" }, "r-9", "ndjson_gz")).toBe("calls/dt=2026-01-02/hr=07/r-9.ndjson.gz");
  });

  test("a name or table that could leave its folder is refused", () => {
    expect(() => objectKey("p", "tracks", { dt: "2026-01-01", hr: "00" }, "../x", "parquet")).toThrow(/safe file name/);
    expect(() => objectKey("p", "a/b", { dt: "2026-01-01", hr: "00" }, "x", "parquet")).toThrow(/path part/);
  });
});
