import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { AuditService } from "../../../gen/waypost/v1/access_pb.js";
import { selectAuditEvents } from "../../db/queries/access/audit-events.js";
import type { Queryable } from "../../db/pool.js";
import { invalidArgument } from "../errors.js";
import { decodePageToken, encodePageToken, listPage, pageSize } from "../paging.js";
import { auditEventToProto } from "./access-proto.js";

/** The audit log, newest first, filtered by actor, target, action and time. */
export function createAuditService(options: { pool: Queryable }): ServiceImpl<typeof AuditService> {
  return {
    async listAuditEvents(req) {
      const cursor = decodePageToken(req.pageToken);
      if (cursor !== undefined && !/^\d{1,19}$/.test(cursor)) throw invalidArgument("pageToken", "is not a token this server issued");
      for (const [field, value] of [
        ["actorId", req.actorId],
        ["targetId", req.targetId],
        ["action", req.action],
      ] as const) {
        if (value.length > 200) throw invalidArgument(field, "is longer than 200 characters");
      }
      const page = await listPage(
        pageSize(req.pageSize, 100, 1000),
        (limit) =>
          selectAuditEvents(options.pool, {
            actorId: req.actorId || undefined,
            targetId: req.targetId || undefined,
            action: req.action || undefined,
            since: req.startTime ? timestampDate(req.startTime) : undefined,
            until: req.endTime ? timestampDate(req.endTime) : undefined,
            beforeId: cursor,
            limit,
          }),
        (last) => encodePageToken(last.id),
      );
      return { events: page.rows.map(auditEventToProto), nextPageToken: page.nextPageToken };
    },
  };
}
