import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type pg from "pg";
import { DeletionRequestSchema, type DeletionService, DeletionStatus, type DeletionRequest } from "../../gen/waypost/v1/deletion_pb.js";
import { requireUserId } from "../audiences/user-id.js";
import type { Clock } from "../clock.js";
import type { JobTableDriver } from "../db/job-table/index.js";
import { createDeletion, type DeletionInput } from "../deletion/create-deletion.js";
import { listDeletionRequestRows } from "../db/queries/deletion-requests.js";
import { readDeletionProgress, type DeletionProgress } from "../deletion/progress.js";
import { invalidArgument, notFound, requireUuid } from "./errors.js";
import { decodeTimeCursor, listPage, pageSize, timeCursorOf } from "./paging.js";

export interface DeletionServiceOptions {
  pool: pg.Pool;
  /** The time of the request and of its delete notifications. */
  clock: Clock;
  /** The job table's driver: it says how a deletion's transaction reaches the shards. */
  jobTable: JobTableDriver;
  /** Identity resolution, when on: the identifier types a request may name. Off: userIds alone, and no profile to forget. */
  identity: { types: readonly string[] } | undefined;
}

/**
 * DeletionService (see docs/api.md#deletion-requests): forgets a user in one transaction and
 * tells every enabled destination of the affected sources, then reports
 * the notifications' delivery and the lakes' files rewritten.
 */
export function createDeletionService(options: DeletionServiceOptions): ServiceImpl<typeof DeletionService> {
  const { pool, clock } = options;
  return {
    async createDeletionRequest(req) {
      const input = validateInput(req.userId, req.sourceIds, req.identifierType, options.identity?.types ?? ["user_id"]);
      const created = await createDeletion({ pool, clock, jobTable: options.jobTable, identity: options.identity !== undefined }, input);
      // Read back through GetDeletionRequest's path, so both report alike
      // (a request with no notification to send is complete at once).
      const progress = await readDeletionProgress(pool, clock, created.id);
      return { deletionRequest: toProto(progress!) };
    },
    async getDeletionRequest(req) {
      const id = requireUuid("id", req.id);
      const progress = await readDeletionProgress(pool, clock, id);
      if (!progress) throw notFound("deletion request", id);
      return { deletionRequest: toProto(progress) };
    },
    async listDeletionRequests(req) {
      const size = pageSize(req.pageSize);
      if (req.userId !== "") requireUserId("userId", req.userId);
      const before = decodeTimeCursor(req.pageToken);
      const userId = req.userId === "" ? undefined : req.userId;
      const page = await listPage(size, (limit) => listDeletionRequestRows(pool, { userId, before, limit }), timeCursorOf);
      // Each request's progress as GetDeletionRequest reports it (a page is
      // at most pageSize requests; a complete one is read from its row).
      const requests: DeletionRequest[] = [];
      for (const row of page.rows) {
        const progress = await readDeletionProgress(pool, clock, row.id);
        if (progress) requests.push(toProto(progress));
      }
      return { deletionRequests: requests, nextPageToken: page.nextPageToken };
    },
  };
}

function validateInput(userId: string, rawSourceIds: readonly string[], rawType: string, types: readonly string[]): DeletionInput {
  requireUserId("userId", userId);
  const identifierType = rawType || "user_id";
  if (!types.includes(identifierType))
    throw invalidArgument(
      "identifierType",
      `must be one of ${types.join(", ")} (identity resolution, and WAYPOST_IDENTITY_RULES, name more)`,
    );
  const sourceIds: string[] = [];
  const sourceIndexes: number[] = [];
  rawSourceIds.forEach((raw, index) => {
    const id = requireUuid(`sourceIds[${index}]`, raw);
    if (sourceIds.includes(id)) return;
    sourceIds.push(id);
    sourceIndexes.push(index);
  });
  return { userId, identifierType, sourceIds, sourceIndexes };
}

function toProto(progress: DeletionProgress): DeletionRequest {
  const { row } = progress;
  return create(DeletionRequestSchema, {
    id: row.id,
    userId: row.user_id,
    identifierType: row.identifier_type,
    sourceIds: row.source_ids,
    status: progress.completedAt ? DeletionStatus.COMPLETED : DeletionStatus.IN_PROGRESS,
    messagesDeleted: BigInt(row.messages_deleted),
    notificationsTotal: BigInt(row.notifications_total),
    notificationsDelivered: BigInt(progress.delivered),
    notificationsFailed: BigInt(progress.failed),
    createTime: timestampFromDate(row.created_at),
    ...(progress.completedAt ? { completeTime: timestampFromDate(progress.completedAt) } : {}),
    lakesTotal: BigInt(progress.lakes.lakes),
    lakesDone: BigInt(progress.lakes.lakesDone),
    lakesFailed: BigInt(progress.lakes.lakesFailed),
    lakeFilesScanned: BigInt(progress.lakes.filesScanned),
    lakeFilesRewritten: BigInt(progress.lakes.filesRewritten),
    lakeFilesDeleted: BigInt(progress.lakes.filesDeleted),
    lakeRowsDeleted: BigInt(progress.lakes.rowsDeleted),
  });
}
