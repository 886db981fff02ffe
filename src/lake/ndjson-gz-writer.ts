import { createWriteStream } from "node:fs";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import type { FileContent, FileWriter } from "./file-content.js";

/**
 * Newline-delimited JSON, gzipped: one object per row with every column of
 * the file (null where the row has no value), so each line has the same
 * keys. Values are as in Parquet: timestamps as UTC ISO text, json columns
 * as JSON text (a string), so one column has one type in both formats.
 */
export function createNdjsonGzWriter(): FileWriter {
  return {
    format: "ndjson_gz",
    async write(content: FileContent, file: string) {
      const names = [...content.columns.keys()];
      // Keys are JSON-quoted once per file, not once per row.
      const quoted = names.map((name, i) => `${i === 0 ? "{" : ","}${JSON.stringify(name)}:`);
      function* lines() {
        let chunk = "";
        const columns = names.map((name) => content.values.get(name) ?? []);
        for (let row = 0; row < content.rowCount; row++) {
          let line = "";
          for (let i = 0; i < names.length; i++) {
            const value = columns[i]![row];
            line += quoted[i] + (value === undefined || value === null ? "null" : JSON.stringify(value));
          }
          chunk += `${line}}\n`;
          // Hand gzip about 64 KiB at a time: fewer stream writes than one per row.
          if (chunk.length >= 65_536) {
            yield chunk;
            chunk = "";
          }
        }
        if (chunk !== "") yield chunk;
      }
      const out = createWriteStream(file);
      await pipeline(Readable.from(lines()), createGzip({ level: 6 }), out);
      return out.bytesWritten;
    },
    close: async () => {},
  };
}
