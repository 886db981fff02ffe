import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  PlanMode,
  TrackingPlanSchema,
  ViolationKind,
  ViolationSchema,
  type TrackingPlan,
  type TrackingPlanService,
} from "../../gen/waypost/v1/tracking_plan_pb.js";
import type { ViolationAggregate, ViolationKindName } from "../db/queries/plan-violations.js";
import type { PlanModeName, TrackingPlanRow } from "../db/queries/tracking-plans.js";
import type { Clock } from "../clock.js";
import { InferenceMemoryError } from "../plans/inference-thread.js";
import { planEtag, planText, type TrackingPlans } from "../plans/tracking-plans.js";
import { invalidArgument, requireUuid } from "./errors.js";
import { pageSize } from "./paging.js";
import { protoEnumNames } from "./proto-enums.js";

export interface TrackingPlanServiceOptions {
  plans: TrackingPlans;
  /** "Now", for InferTrackingPlan's default window. */
  clock: Clock;
  /** The cap of an admin answer: a larger inferred plan is resource_exhausted. */
  maxResponseBytes?: number;
}

const defaultInferWindowMs = 7 * 86_400_000;

/** PLAN_MODE_UNSPECIFIED has no name: a plan set without a mode keeps the one it has. */
const modes = protoEnumNames<PlanMode, PlanModeName>({
  off: PlanMode.OFF,
  observe: PlanMode.OBSERVE,
  omit: PlanMode.OMIT,
  block: PlanMode.BLOCK,
});

const kindOf: Record<ViolationKindName, ViolationKind> = {
  unplanned_event: ViolationKind.UNPLANNED_EVENT,
  required_missing: ViolationKind.REQUIRED_MISSING,
  wrong_type: ViolationKind.WRONG_TYPE,
  unplanned_property: ViolationKind.UNPLANNED_PROPERTY,
  other: ViolationKind.OTHER,
};

/** TrackingPlanService (see docs/tracking-plans.md): one plan per source, and its violations. */
export function createTrackingPlanService(options: TrackingPlanServiceOptions): ServiceImpl<typeof TrackingPlanService> {
  const { plans } = options;
  return {
    async setTrackingPlan(req) {
      const sourceId = requireUuid("sourceId", req.sourceId);
      if (!modes.knows(req.mode)) throw invalidArgument("mode", `${req.mode} is not a plan mode`);
      const result = await plans.set({ sourceId, plan: req.plan, planText: req.planJson, mode: modes.nameOf(req.mode), etag: req.etag });
      if ("conflict" in result) {
        throw new ConnectError(
          `the tracking plan of source ${sourceId} was changed since etag ${JSON.stringify(req.etag)} was read; get it again and retry`,
          Code.Aborted,
        );
      }
      return { trackingPlan: toProto(sourceId, result.plan) };
    },
    async getTrackingPlan(req) {
      const sourceId = requireUuid("sourceId", req.sourceId);
      return { trackingPlan: toProto(sourceId, await plans.get(sourceId)) };
    },
    async listViolations(req) {
      const sourceId = requireUuid("sourceId", req.sourceId);
      const limit = pageSize(req.pageSize, 100, 1000);
      const since = req.since ? timestampDate(req.since) : undefined;
      const rows = await plans.violations({ sourceId, since, limit });
      return { violations: rows.map(violationToProto) };
    },
    async inferTrackingPlan(req) {
      const sourceId = requireUuid("sourceId", req.sourceId);
      const since = req.since ? timestampDate(req.since) : new Date(options.clock.now().getTime() - defaultInferWindowMs);
      const inferred = await plans.infer(sourceId, since).catch((error: unknown) => {
        if (error instanceof InferenceMemoryError) throw new ConnectError(error.message, Code.ResourceExhausted);
        throw error;
      });
      const bytes = Buffer.byteLength(JSON.stringify(inferred.plan));
      const cap = options.maxResponseBytes ?? Number.POSITIVE_INFINITY;
      if (bytes > cap) {
        throw new ConnectError(
          `the plan inferred from ${inferred.callsRead} calls is ${bytes} bytes, over the limit of ${cap} bytes of an admin answer; infer from a shorter time (since)`,
          Code.ResourceExhausted,
        );
      }
      return { plan: inferred.plan as JsonObject, callsRead: BigInt(inferred.callsRead) };
    },
  };
}

function toProto(sourceId: string, row: TrackingPlanRow | undefined): TrackingPlan {
  if (!row) return create(TrackingPlanSchema, { sourceId, mode: PlanMode.OFF, etag: "" });
  const text = planText(row);
  return create(TrackingPlanSchema, {
    sourceId,
    // In the order it was applied (jsonb's is not).
    plan: (row.plan_text === null ? row.plan : JSON.parse(text)) as JsonObject,
    planJson: text,
    mode: modes.valueOf(row.mode),
    etag: planEtag(row),
    updateTime: timestampFromDate(row.updated_at),
  });
}

function violationToProto(row: ViolationAggregate) {
  return create(ViolationSchema, {
    callType: row.callType,
    event: row.event,
    path: row.path,
    kind: kindOf[row.kind],
    message: row.message,
    count: BigInt(row.count),
    firstSeen: timestampFromDate(row.firstSeen),
    lastSeen: timestampFromDate(row.lastSeen),
    example: row.example,
  });
}
