import { randomBytes, randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type pg from "pg";
import { SourceSchema, SourceService, type Source } from "../../gen/waypost/v1/source_pb.js";
import { hashWriteKey } from "./auth.js";
import { validateName } from "./destination-validation.js";
import { invalidArgument, notFound, requireUuid } from "./errors.js";
import { decodeTimeCursor, encodeTimeCursor, pageSize } from "./paging.js";

export interface SourceServiceOptions {
  pool: pg.Pool;
  /** Called after a write key stops being valid, so caches drop it. */
  onWriteKeyChange: () => void;
}

interface SourceRow {
  id: string;
  name: string;
  created_at: Date;
  /** created_at as Postgres prints it: microseconds survive the round trip. */
  cursor_at?: string;
}

/** SourceService: sources and their write keys. */
export function createSourceService(options: SourceServiceOptions): ServiceImpl<typeof SourceService> {
  const { pool } = options;
  return {
    async createSource(req) {
      const name = validName(req.source?.name ?? "");
      const writeKey = newWriteKey();
      const result = await pool.query<SourceRow>(
        "INSERT INTO sources (id, name, write_key_hash) VALUES ($1, $2, $3) RETURNING id, name, created_at",
        [randomUUID(), name, hashWriteKey(writeKey)],
      );
      return { source: toProto(result.rows[0]!, writeKey) };
    },
    async getSource(req) {
      const id = requireUuid("id", req.id);
      const row = (await pool.query<SourceRow>("SELECT id, name, created_at FROM sources WHERE id = $1", [id])).rows[0];
      if (!row) throw notFound("source", id);
      return { source: toProto(row) };
    },
    async listSources(req) {
      const size = pageSize(req.pageSize);
      const after = decodeTimeCursor(req.pageToken);
      const result = await pool.query<SourceRow>(
        `SELECT id, name, created_at, created_at::text AS cursor_at FROM sources
          WHERE $1::timestamptz IS NULL OR (created_at, id) > ($1, $2::uuid)
          ORDER BY created_at, id LIMIT $3`,
        [after?.createdAt ?? null, after?.id ?? null, size + 1],
      );
      const rows = result.rows.slice(0, size);
      const last = rows[rows.length - 1];
      return {
        sources: rows.map((row) => toProto(row)),
        nextPageToken: result.rows.length > size && last ? encodeTimeCursor(last.cursor_at!, last.id) : "",
      };
    },
    async rotateWriteKey(req) {
      const id = requireUuid("id", req.id);
      const writeKey = newWriteKey();
      const result = await pool.query<SourceRow>(
        "UPDATE sources SET write_key_hash = $2 WHERE id = $1 RETURNING id, name, created_at",
        [id, hashWriteKey(writeKey)],
      );
      if (!result.rows[0]) throw notFound("source", id);
      options.onWriteKeyChange();
      return { source: toProto(result.rows[0], writeKey) };
    },
    async deleteSource(req) {
      const id = requireUuid("id", req.id);
      const result = await pool.query("DELETE FROM sources WHERE id = $1", [id]);
      if (result.rowCount === 0) throw notFound("source", id);
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
  return "wk_" + randomBytes(32).toString("base64url");
}

function toProto(row: SourceRow, writeKey = ""): Source {
  return create(SourceSchema, {
    id: row.id,
    name: row.name,
    writeKey,
    createTime: timestampFromDate(row.created_at),
  });
}
