import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type pg from "pg";
import {
  AudienceKind,
  AudienceSchema,
  type AudienceService,
  SyncCountsSchema,
  type Audience,
  type SyncCounts,
} from "../../gen/waypost/v1/audience_pb.js";
import { identifyTemplate } from "../audiences/identify-template.js";
import { audienceChunks, traitChunks } from "../audiences/member-chunks.js";
import { openStream } from "../audiences/request-stream.js";
import { createSyncer, type SyncTarget } from "../audiences/syncer.js";
import { maxTraitKeyLength, traitKey } from "../audiences/trait-key.js";
import type { Clock } from "../clock.js";
import type { JobTableDriver } from "../db/job-table/index.js";
import type { ApplySyncResult } from "../db/queries/audience-apply-sync.js";
import {
  deleteAudience,
  insertAudience,
  listAudienceRows,
  selectAudience,
  sourceExists,
  type AudienceKindName,
  type AudienceRow,
} from "../db/queries/audience-rows.js";
import { validateName } from "./destination-validation.js";
import { invalidArgument, notFound, requireUuid } from "./errors.js";
import { decodeTimeCursor, listPage, pageSize, timeCursorOf } from "./paging.js";
import { protoEnumNames } from "./proto-enums.js";

export interface AudienceServiceOptions {
  pool: pg.Pool;
  /** The receive time of generated identify calls. */
  clock: Clock;
  /** Syncs applied at once by this process (each holds a pooled connection while it streams). Default 4. */
  maxConcurrentSyncs?: number;
  /** The job table's driver: it says how a sync's transaction reaches the shards. */
  jobTable: JobTableDriver;
}

/**
 * AudienceService (see docs/api.md#audiences-and-computed-traits): audiences and computed traits of a
 * source, synced as identify calls that carry only what changed.
 */
export function createAudienceService(options: AudienceServiceOptions): ServiceImpl<typeof AudienceService> {
  const { pool, clock } = options;
  const syncer = createSyncer({ pool, clock, maxConcurrentSyncs: options.maxConcurrentSyncs, jobTable: options.jobTable });

  /** The audience a sync names, checked to be of the kind the RPC syncs. */
  async function syncTarget(rawId: string, kind: AudienceKindName): Promise<SyncTarget> {
    const id = requireUuid("audienceId", rawId);
    const row = await selectAudience(pool, id);
    if (!row) throw notFound("audience", id);
    if (row.kind !== kind) {
      throw invalidArgument(
        "audienceId",
        kind === "audience"
          ? `${id} is a computed trait: sync it with SyncComputedTrait`
          : `${id} is an audience: sync it with SyncAudience`,
      );
    }
    return { id: row.id, sourceId: row.source_id, key: row.key, kind: row.kind, byProfile: row.by_profile };
  }

  return {
    async createAudience(req) {
      const input = req.audience;
      if (!input) throw invalidArgument("audience", "is required");
      const sourceId = requireUuid("audience.sourceId", input.sourceId);
      const name = validName(input.name);
      const key = traitKey(name);
      if (key === "") throw invalidArgument("audience.name", "has no letter or digit, so it gives no trait key");
      if (key.length > maxTraitKeyLength) {
        throw invalidArgument("audience.name", `gives a trait key longer than ${maxTraitKeyLength} characters`);
      }
      const kind = kindName(input.kind);
      if (!(await sourceExists(pool, sourceId))) throw unknownSource(sourceId);
      let row: AudienceRow | undefined;
      try {
        row = await insertAudience(pool, {
          id: randomUUID(),
          sourceId,
          name,
          key,
          kind,
          byProfile: input.byProfile,
          createdAt: clock.now(),
        });
      } catch (error) {
        // The source was deleted between the check and the insert.
        if ((error as { code?: string }).code === "23503") throw unknownSource(sourceId);
        throw error;
      }
      if (!row) {
        throw new ConnectError(
          `source ${sourceId} already has an audience or computed trait with the trait key ${JSON.stringify(key)}; ` +
            "choose another name",
          Code.AlreadyExists,
        );
      }
      return { audience: toProto(row) };
    },

    async listAudiences(req) {
      const size = pageSize(req.pageSize);
      const sourceId = req.sourceId ? requireUuid("sourceId", req.sourceId) : undefined;
      const after = decodeTimeCursor(req.pageToken);
      const page = await listPage(size, (limit) => listAudienceRows(pool, { sourceId, after, limit }), timeCursorOf);
      return { audiences: page.rows.map(toProto), nextPageToken: page.nextPageToken };
    },

    async syncAudience(req) {
      const target = await syncTarget(req.audienceId, "audience");
      return { counts: toCounts(await syncer.run(target, audienceChunks(req.userIds))) };
    },

    async streamSyncAudience(requests) {
      const stream = await openStream(requests);
      const target = await syncTarget(stream.first.audienceId, "audience");
      const chunks = stream.chunks(target.id, (message, where) => audienceChunks(message.userIds, where));
      return { counts: toCounts(await syncer.run(target, chunks)) };
    },

    async syncComputedTrait(req) {
      const target = await syncTarget(req.audienceId, "computed_trait");
      const sizing = identifyTemplate(target.key, clock.now());
      return { counts: toCounts(await syncer.run(target, traitChunks(req.values, sizing))) };
    },

    async streamSyncComputedTrait(requests) {
      const stream = await openStream(requests);
      const target = await syncTarget(stream.first.audienceId, "computed_trait");
      // Only sizes come from this template: the calls get the apply time,
      // whose ISO form has the same length.
      const sizing = identifyTemplate(target.key, clock.now());
      const chunks = stream.chunks(target.id, (message, where) => traitChunks(message.values, sizing, where));
      return { counts: toCounts(await syncer.run(target, chunks)) };
    },

    async deleteAudience(req) {
      const id = requireUuid("id", req.id);
      // Stored membership goes with it; receivers keep the trait as last
      // sent (no `false` is sent to every member).
      if (!(await deleteAudience(pool, id))) throw notFound("audience", id);
      return {};
    },
  };
}

function validName(name: string): string {
  return validateName("audience.name", name);
}

const kinds = protoEnumNames<AudienceKind, AudienceKindName>(
  { audience: AudienceKind.AUDIENCE, computed_trait: AudienceKind.COMPUTED_TRAIT },
  "audience",
);

function kindName(kind: AudienceKind): AudienceKindName {
  const name = kinds.nameOf(kind);
  if (name === undefined) throw invalidArgument("audience.kind", `unknown kind ${kind as number}`);
  return name;
}

function unknownSource(sourceId: string): ConnectError {
  return invalidArgument("audience.sourceId", `unknown source ${JSON.stringify(sourceId)}`);
}

function toCounts(result: ApplySyncResult & { skipped: number }): SyncCounts {
  return create(SyncCountsSchema, {
    added: BigInt(result.added),
    removed: BigInt(result.removed),
    changed: BigInt(result.changed),
    unchanged: BigInt(result.members - result.added - result.changed),
    calls: BigInt(result.added + result.removed + result.changed),
    skipped: BigInt(result.skipped),
  });
}

function toProto(row: AudienceRow): Audience {
  return create(AudienceSchema, {
    id: row.id,
    sourceId: row.source_id,
    name: row.name,
    key: row.key,
    kind: kinds.valueOf(row.kind),
    byProfile: row.by_profile,
    memberCount: BigInt(row.member_count),
    createTime: timestampFromDate(row.created_at),
    ...(row.last_synced_at ? { lastSyncTime: timestampFromDate(row.last_synced_at) } : {}),
  });
}
