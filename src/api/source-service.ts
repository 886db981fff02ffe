import { randomBytes, randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type pg from "pg";
import { type Source, SourceKind, SourceSchema, type SourceService } from "../../gen/waypost/v1/source_pb.js";
import { withTransaction } from "../db/pool.js";
import {
  deleteSourceRow,
  insertSource,
  listSourceRows,
  type SourceRow,
  selectSource,
  selectSourceForUpdate,
  updateHookTokenHash,
  updateSourceRow,
  updateWriteKeyHash,
} from "../db/queries/sources.js";
import { hookSettingsFromStored, validateHookSettings } from "../ingest/hooks/hook-settings.js";
import { hashHookToken, newHookToken } from "../ingest/hooks/hook-token.js";
import type { TransformSandboxes } from "../sandbox/transform-sandbox.js";
import { hashWriteKey } from "./auth.js";
import { validateName } from "./destination-validation.js";
import { notFound, requireUuid } from "./errors.js";
import { decodeTimeCursor, listPage, pageSize, timeCursorOf } from "./paging.js";
import { hookSettingsToProto } from "./webhook-source-proto.js";
import { mergeWebhookUpdate, sourceUpdatePaths, webhookInputForCreate } from "./webhook-source-update.js";

export interface SourceServiceOptions {
  pool: pg.Pool;
  /** Called after a write key stops being valid, so caches drop it. */
  onWriteKeyChange: () => void;
  /** Parses webhook transforms on create and update (never runs them); without it only their size is checked. */
  sandboxes?: TransformSandboxes;
  /** Called after a webhook source's settings or token change or it is deleted, so caches of them drop it. */
  onHookSourceChange?: (sourceId: string) => void;
}

/** SourceService: sources, their write keys and, for webhook sources, their settings and inbound URL tokens. */
export function createSourceService(options: SourceServiceOptions): ServiceImpl<typeof SourceService> {
  const { pool } = options;
  const hookChanged = (id: string) => options.onHookSourceChange?.(id);
  return {
    async createSource(req) {
      const name = validName(req.source?.name ?? "");
      const input = webhookInputForCreate(req.source);
      const settings = input ? await validateHookSettings(input, { sandboxes: options.sandboxes }) : undefined;
      const writeKey = newWriteKey();
      const hookToken = settings ? newHookToken() : "";
      const row = await insertSource(pool, {
        id: randomUUID(),
        name,
        writeKeyHash: hashWriteKey(writeKey),
        ...(settings ? { webhook: { settings, hookTokenHash: hashHookToken(hookToken) } } : {}),
      });
      return { source: toProto(row, { writeKey, hookToken }) };
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
      const page = await listPage(size, (limit) => listSourceRows(pool, { after, limit }), timeCursorOf);
      return { sources: page.rows.map((row) => toProto(row)), nextPageToken: page.nextPageToken };
    },
    async rotateWriteKey(req) {
      const id = requireUuid("id", req.id);
      const writeKey = newWriteKey();
      const row = await updateWriteKeyHash(pool, id, hashWriteKey(writeKey));
      if (!row) throw notFound("source", id);
      options.onWriteKeyChange();
      return { source: toProto(row, { writeKey }) };
    },
    async updateSource(req) {
      const input = req.source;
      const id = requireUuid("source.id", input?.id ?? "");
      if (!input) throw notFound("source", id);
      const paths = sourceUpdatePaths(req.updateMask?.paths ?? [], input);
      const name = paths.has("name") ? validName(input.name) : undefined;
      const row = await withTransaction(pool, async (tx) => {
        const current = await selectSourceForUpdate(tx, id);
        if (!current) throw notFound("source", id);
        const merged = mergeWebhookUpdate(current, input, paths);
        const webhook = merged ? await validateHookSettings(merged, { sandboxes: options.sandboxes }) : undefined;
        return (await updateSourceRow(tx, id, { name: name ?? current.name, ...(webhook ? { webhook } : {}) }))!;
      });
      if (row.kind === "webhook") hookChanged(id);
      return { source: toProto(row) };
    },
    async rotateHookToken(req) {
      const id = requireUuid("id", req.id);
      const hookToken = newHookToken();
      const row = await updateHookTokenHash(pool, id, hashHookToken(hookToken));
      if (!row) {
        if (await selectSource(pool, id)) {
          throw new ConnectError(`source ${JSON.stringify(id)} is not a webhook source: it has no inbound URL`, Code.FailedPrecondition);
        }
        throw notFound("source", id);
      }
      hookChanged(id);
      return { source: toProto(row, { hookToken }) };
    },
    async deleteSource(req) {
      const id = requireUuid("id", req.id);
      if (!(await deleteSourceRow(pool, id))) throw notFound("source", id);
      options.onWriteKeyChange();
      hookChanged(id);
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

/** The source as shown; the write key and hook token only when just made. */
function toProto(row: SourceRow, shown: { writeKey?: string; hookToken?: string } = {}): Source {
  return create(SourceSchema, {
    id: row.id,
    name: row.name,
    writeKey: shown.writeKey ?? "",
    createTime: timestampFromDate(row.created_at),
    kind: row.kind === "webhook" ? SourceKind.WEBHOOK : SourceKind.SDK,
    ...(row.kind === "webhook" ? { webhook: hookSettingsToProto(hookSettingsFromStored(row.webhook)) } : {}),
    hookToken: shown.hookToken ?? "",
  });
}
