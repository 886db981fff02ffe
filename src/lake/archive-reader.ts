import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { archiveTable } from "./archive-row.js";
import type { FileReader, LakeFileRow } from "./file-reader.js";
import { trimSlashes } from "./lake-url.js";
import { type LakeFormat, partitionOf, partitionPath } from "./object-keys.js";
import type { ObjectStore } from "./object-store-types.js";

/** A call read back from the archive's `calls` table. */
export interface ArchivedCall {
  messageId: string;
  sourceId: string;
  type: string;
  receivedAt: Date;
  userId: string | null;
  anonymousId: string | null;
  /** The call as Waypost stored it (messages.payload), JSON text. */
  payload: string;
}

export interface ArchiveReaderOptions {
  store: ObjectStore;
  reader: FileReader;
  /** The lake URL's key prefix ("" for a directory). */
  prefix: string;
}

/** Reads an archive lake's `calls` files, an hour partition at a time. */
export interface ArchiveReader {
  /** The keys of the archive's files of the hour starting at `hour` (ms since the epoch, a whole hour), in key order. */
  listHour(hour: number): Promise<string[]>;
  /**
   * The calls of one file in pages of at most `pageRows`, in file order,
   * rows that are not a whole call (no messageId, source or body) left out.
   * The object is downloaded to a temp file first, removed when the pages end.
   */
  readFile(key: string, pageRows: number): AsyncGenerator<ArchivedCall[]>;
  close(): Promise<void>;
}

export const hourMs = 3_600_000;

/** The format of a lake file, by its name's ending; undefined for anything else (a stray object under the prefix). */
export function formatOfKey(key: string): LakeFormat | undefined {
  if (key.endsWith(".parquet")) return "parquet";
  if (key.endsWith(".ndjson.gz")) return "ndjson_gz";
  return undefined;
}

/**
 * An archive reader over a lake's store. Only the hours asked for are
 * listed (`<prefix>/calls/dt=…/hr=…/`), so a range of a day reads a day's
 * listing, not the bucket's.
 */
export function createArchiveReader(options: ArchiveReaderOptions): ArchiveReader {
  const { store, reader } = options;
  const base = trimSlashes(options.prefix);
  let directory: Promise<string> | undefined;
  const work = () => (directory ??= mkdtemp(path.join(tmpdir(), "waypost-replay-")));

  return {
    async listHour(hour) {
      const partition = partitionPath(partitionOf(new Date(hour)));
      const prefix = `${base === "" ? "" : `${base}/`}${archiveTable}/${partition}/`;
      const entries = await store.list(prefix);
      return entries.map((e) => e.key).filter((key) => formatOfKey(key) !== undefined);
    },
    async *readFile(key, pageRows) {
      const format = formatOfKey(key);
      if (!format) return;
      const local = path.join(await work(), `${Date.now()}-${Math.random().toString(36).slice(2)}.${format.replace("_", ".")}`);
      await writeFile(local, await store.get(key));
      try {
        for await (const rows of reader.read(local, format, { pageRows })) {
          const calls: ArchivedCall[] = [];
          for (const row of rows) {
            const call = archivedCallOf(row);
            if (call) calls.push(call);
          }
          yield calls;
        }
      } finally {
        await rm(local, { force: true });
      }
    },
    async close() {
      await reader.close();
      await store.close();
      if (directory) await rm(await directory, { recursive: true, force: true });
    },
  };
}

const text = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : null);

/** A `calls` row as a call; undefined when it lacks what a replay needs. */
export function archivedCallOf(row: LakeFileRow): ArchivedCall | undefined {
  const messageId = text(row.message_id);
  const sourceId = text(row.source_id);
  const type = text(row.type);
  const received = text(row.received_at);
  const payload = text(row.call);
  if (!messageId || !sourceId || !type || !received || !payload) return undefined;
  const receivedAt = new Date(received);
  if (Number.isNaN(receivedAt.getTime())) return undefined;
  return { messageId, sourceId, type, receivedAt, userId: text(row.user_id), anonymousId: text(row.anonymous_id), payload };
}
