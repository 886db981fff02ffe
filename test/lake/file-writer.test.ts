import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { contentOfRows } from "../../src/lake/file-content.js";
import { createFileWriter } from "../../src/lake/file-writer.js";
import type { LakeType, LakeValue } from "../../src/lake/lake-types.js";
import { parquetCodecs, parquetColumns, readLakeFiles } from "../helpers/duckdb-read.js";

const scratch = mkdtempSync(path.join(tmpdir(), "waypost-lake-writer-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const columns = new Map<string, LakeType>([
  ["id", "text"],
  ["count", "bigint"],
  ["price", "double"],
  ["paid", "boolean"],
  ["received_at", "timestamp"],
  ["products", "json"],
  ["note", "text"],
]);

const row = (values: Record<string, LakeValue | null>) => new Map(Object.entries(values));
const rows = [
  row({
    id: "a",
    count: 9007199254740991,
    price: 42.5,
    paid: true,
    received_at: "2026-11-22T10:04:05.123Z",
    products: '[{"sku":"x"}]',
    note: 'it\'s "quoted" ünïcode',
  }),
  row({ id: "b", count: -3, price: 0.1, paid: false, received_at: "2026-11-22T23:59:59.123456Z", products: '{"a":1}', note: null }),
  // A column the row lacks is null.
  row({ id: "c" }),
];

describe("Parquet writer", () => {
  test("every type round-trips through DuckDB with the documented Parquet types, zstd-compressed", async () => {
    const writer = createFileWriter({ format: "parquet" });
    try {
      const file = path.join(scratch, "types.parquet");
      const bytes = await writer.write(contentOfRows(columns, rows), file);
      expect(bytes).toBeGreaterThan(0);
      const schema = await parquetColumns(file);
      expect(schema.id).toMatchObject({ type: "BYTE_ARRAY", converted: "UTF8" });
      expect(schema.count).toMatchObject({ type: "INT64" });
      expect(schema.price).toMatchObject({ type: "DOUBLE" });
      expect(schema.paid).toMatchObject({ type: "BOOLEAN" });
      expect(schema.received_at?.type).toBe("INT64");
      expect(schema.received_at?.logical).toMatch(
        /TimestampType\(isAdjustedToUTC=(1|true), unit=TimeUnit\(MILLIS=<null>, MICROS=MicroSeconds\(\)/,
      );
      expect(schema.products).toMatchObject({ type: "BYTE_ARRAY", converted: "UTF8" });
      expect(await parquetCodecs(file)).toEqual(["ZSTD"]);

      const back = await readLakeFiles([file], { orderBy: "id" });
      expect(back.types).toEqual({
        id: "VARCHAR",
        count: "BIGINT",
        price: "DOUBLE",
        paid: "BOOLEAN",
        received_at: "TIMESTAMP WITH TIME ZONE",
        products: "VARCHAR",
        note: "VARCHAR",
      });
      expect(back.rows).toEqual([
        {
          id: "a",
          count: "9007199254740991",
          price: 42.5,
          paid: true,
          received_at: "2026-11-22 10:04:05.123+00",
          products: '[{"sku":"x"}]',
          note: 'it\'s "quoted" ünïcode',
        },
        { id: "b", count: "-3", price: 0.1, paid: false, received_at: "2026-11-22 23:59:59.123456+00", products: '{"a":1}', note: null },
        { id: "c", count: null, price: null, paid: null, received_at: null, products: null, note: null },
      ]);
    } finally {
      await writer.close();
    }
  });

  test("writing the same file again replaces it; column names needing quotes are kept", async () => {
    const writer = createFileWriter({ format: "parquet" });
    try {
      const file = path.join(scratch, "it's.parquet");
      const odd = new Map<string, LakeType>([['x"; DROP TABLE t; --', "text"]]);
      await writer.write(contentOfRows(odd, [row({ 'x"; DROP TABLE t; --': "one" })]), file);
      await writer.write(contentOfRows(odd, [row({ 'x"; DROP TABLE t; --': "two" })]), file);
      const back = await readLakeFiles([file]);
      expect(back.rows).toEqual([{ 'x"; DROP TABLE t; --': "two" }]);
    } finally {
      await writer.close();
    }
  });
});

describe("NDJSON.gz writer", () => {
  test("every type round-trips through DuckDB's read_json", async () => {
    const writer = createFileWriter({ format: "ndjson_gz" });
    const file = path.join(scratch, "types.ndjson.gz");
    await writer.write(contentOfRows(columns, rows), file);
    const back = await readLakeFiles([file], { orderBy: "id" });
    expect(back.types).toMatchObject({ id: "VARCHAR", price: "DOUBLE", paid: "BOOLEAN", products: "VARCHAR" });
    // read_json infers an integer type wide enough for the values it sees (HUGEINT for 2^53 - 1).
    expect(back.types.count).toMatch(/INT$/);
    expect(back.types.received_at).toMatch(/^TIMESTAMP/);
    expect(back.rows.map((r) => [r.id, r.count, r.price, r.paid, r.products, r.note])).toEqual([
      ["a", "9007199254740991", 42.5, true, '[{"sku":"x"}]', 'it\'s "quoted" ünïcode'],
      ["b", "-3", 0.1, false, '{"a":1}', null],
      ["c", null, null, null, null, null],
    ]);
    await writer.close();
  });
});
