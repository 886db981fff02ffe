import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, expect, test } from "vitest";
import { contentOfRows } from "../../src/lake/file-content.js";
import { createFileReader } from "../../src/lake/file-reader.js";
import { createFileWriter } from "../../src/lake/file-writer.js";
import type { LakeType, LakeValue } from "../../src/lake/lake-types.js";
import { formatFiles, type LakeFormat } from "../../src/lake/object-keys.js";
import { readLakeFiles } from "../helpers/duckdb-read.js";

const scratch = mkdtempSync(path.join(tmpdir(), "waypost-lake-reader-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const columns = new Map<string, LakeType>([
  ["id", "text"],
  ["count", "bigint"],
  ["price", "double"],
  ["paid", "boolean"],
  ["received_at", "timestamp"],
  ["call", "json"],
]);
const rows: Array<Map<string, LakeValue | null>> = Array.from(
  { length: 25 },
  (_, i) =>
    new Map<string, LakeValue | null>([
      ["id", `m-${i}`],
      ["count", i === 3 ? null : 9007199254740000 + i],
      ["price", i + 0.25],
      ["paid", i % 2 === 0],
      ["received_at", i === 4 ? "2026-11-22T10:04:05.123456Z" : "2026-11-22T10:04:05.123Z"],
      ["call", JSON.stringify({ messageId: `m-${i}`, n: i })],
    ]),
);

for (const format of ["parquet", "ndjson_gz"] as const satisfies readonly LakeFormat[]) {
  test(`${format}: what the writer wrote reads back row for row, in pages, and writes again unchanged`, async () => {
    const writer = createFileWriter({ format });
    const reader = createFileReader();
    try {
      const first = path.join(scratch, `first.${formatFiles[format].extension}`);
      await writer.write(contentOfRows(columns, rows), first);
      const pages: Array<Array<Record<string, LakeValue | null>>> = [];
      for await (const page of reader.read(first, format, { pageRows: 10 })) pages.push(page);
      expect(pages.map((p) => p.length)).toEqual([10, 10, 5]);
      const back = pages.flat();
      expect(back[3]).toEqual({
        id: "m-3",
        count: null,
        price: 3.25,
        paid: false,
        received_at: "2026-11-22T10:04:05.123Z",
        call: '{"messageId":"m-3","n":3}',
      });
      expect(back[4]!.received_at).toBe("2026-11-22T10:04:05.123456Z");
      expect(back[24]!.count).toBe(9007199254740024);
      // Without one row, written again: the rest is as it was.
      const second = path.join(scratch, `second.${formatFiles[format].extension}`);
      const kept = back.filter((row) => row.id !== "m-7").map((row) => new Map(Object.entries(row)));
      await writer.write(contentOfRows(columns, kept), second);
      const again = await readLakeFiles([second], { orderBy: "id" });
      const before = await readLakeFiles([first], { orderBy: "id" });
      expect(again.types).toEqual(before.types);
      expect(again.rows).toEqual(before.rows.filter((row) => row.id !== "m-7"));
    } finally {
      await reader.close();
      await writer.close();
    }
  });
}
