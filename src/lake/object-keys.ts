import { trimSlashes } from "./lake-url.js";

/** A lake file's format: Parquet with zstd, or newline-delimited JSON gzipped. */
export type LakeFormat = "parquet" | "ndjson_gz";

/** The file name ending and the Content-Type of each format. */
export const formatFiles: Record<LakeFormat, { extension: string; contentType: string }> = {
  parquet: { extension: "parquet", contentType: "application/vnd.apache.parquet" },
  ndjson_gz: { extension: "ndjson.gz", contentType: "application/x-ndjson" },
};

/** The hour a row belongs to: `dt=YYYY-MM-DD/hr=HH` of the call's received_at, in UTC. */
export interface Partition {
  dt: string;
  hr: string;
}

// The last hour asked for: a page's calls share one or two hours, so its calls' partitions are made once.
let lastHour = Number.NaN;
let lastPartition: Partition = { dt: "", hr: "" };

export function partitionOf(receivedAt: Date): Partition {
  const hour = Math.floor(receivedAt.getTime() / 3_600_000);
  if (hour !== lastHour) {
    const iso = receivedAt.toISOString();
    lastPartition = { dt: iso.slice(0, 10), hr: iso.slice(11, 13) };
    lastHour = hour;
  }
  return lastPartition;
}

/** `dt=…/hr=…`, also a key to group rows by. */
export function partitionPath(partition: Partition): string {
  return `dt=${partition.dt}/hr=${partition.hr}`;
}

// What a file name may hold: it is part of a key and of a local path, so no `/` and no leading `.`.
const safeName = /^[A-Za-z0-9_-][A-Za-z0-9._=-]{0,199}$/;

/**
 * The key of a lake file: `<prefix>/<table>/dt=YYYY-MM-DD/hr=HH/<name>.<ext>`.
 * `name` says what the file holds (the batch's range, see batchFileName), so
 * an upload retried for the same batch writes the same key again and
 * replaces the object rather than adding a duplicate.
 */
export function objectKey(prefix: string, table: string, partition: Partition, name: string, format: LakeFormat): string {
  if (!safeName.test(name)) throw new Error(`lake file name ${JSON.stringify(name)} is not a safe file name`);
  if (table === "" || table.includes("/") || table.startsWith("."))
    throw new Error(`lake table name ${JSON.stringify(table)} cannot be a path part`);
  const base = trimSlashes(prefix);
  const path = `${table}/${partitionPath(partition)}/${name}.${formatFiles[format].extension}`;
  return base === "" ? path : `${base}/${path}`;
}

/**
 * A file name from the range of a batch (its first and last call ids, or a
 * range id): zero-padded so names sort in order in a listing.
 */
export function batchFileName(first: bigint | number | string, last: bigint | number | string = first): string {
  const part = (id: bigint | number | string) => {
    const text = String(id);
    return /^\d+$/.test(text) ? text.padStart(20, "0") : text;
  };
  return first === last ? part(first) : `${part(first)}-${part(last)}`;
}
