import { randomBytes, randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type pg from "pg";
import { SourceSchema, type SourceService, type Source } from "../../gen/waypost/v1/source_pb.js";
import { deleteSourceRow, insertSource, listSourceRows, selectSource, updateWriteKeyHash, type SourceRow } from "../db/queries/sources.js";
import { hashWriteKey } from "./auth.js";
import { validateName } from "./destination-validation.js";
import { notFound, requireUuid } from "./errors.js";
import { decodeTimeCursor, encodeTimeCursor, pageSize } from "./paging.js";

export interface SourceServiceOptions {
  pool: pg.Pool;
  /** Called after a write key stops being valid, so caches drop it. */
  onWriteKeyChange: () => void;
}

/** SourceService: sources and their write keys. */
export function createSourceService(options: SourceServiceOptions): ServiceImpl<typeof SourceService> {
  const { pool } = options;
  return {
    async createSource(req) {
      const name = validName(req.source?.name ?? "");
      const writeKey = newWriteKey();
      const row = await insertSource(pool, { id: randomUUID(), name, writeKeyHash: hashWriteKey(writeKey) });
      return { source: toProto(row, writeKey) };
    },
    async getSource(req) {
      const id = requireUuid("id", req.id);
      const row = await selectSource(pool, id);
      if (!row) throw notFound("source", id);
      return { source: toProto(row) };
    },
    async listSources(req) {
      const size = pageSize(req.pageSize);
      const after = decodeTimeCursor(req.pageToken);
      const found = await listSourceRows(pool, { after, limit: size + 1 });
      const rows = found.slice(0, size);
      const last = rows[rows.length - 1];
      return {
        sources: rows.map((row) => toProto(row)),
        nextPageToken: found.length > size && last ? encodeTimeCursor(last.cursor_at, last.id) : "",
      };
    },
    async rotateWriteKey(req) {
      const id = requireUuid("id", req.id);
      const writeKey = newWriteKey();
      const row = await updateWriteKeyHash(pool, id, hashWriteKey(writeKey));
      if (!row) throw notFound("source", id);
      options.onWriteKeyChange();
      return { source: toProto(row, writeKey) };
    },
    // Placeholders until webhook sources are built: refused as not implemented.
    async updateSource() {
      throw new ConnectError("UpdateSource is not built yet", Code.Unimplemented);
    },
    async rotateHookToken() {
      throw new ConnectError("RotateHookToken is not built yet", Code.Unimplemented);
    },
    async deleteSource(req) {
      const id = requireUuid("id", req.id);
      if (!(await deleteSourceRow(pool, id))) throw notFound("source", id);
      options.onWriteKeyChange();
      return {};
    },
  };
}

function validName(name: string): string {
  return validateName("source.name", name);
}

/** 32 random bytes; the prefix makes a leaked key recognisable to scanners. */
function newWriteKey(): string {
  return `wk_${randomBytes(32).toString("base64url")}`;
}

function toProto(row: SourceRow, writeKey = ""): Source {
  return create(SourceSchema, {
    id: row.id,
    name: row.name,
    writeKey,
    createTime: timestampFromDate(row.created_at),
  });
}
