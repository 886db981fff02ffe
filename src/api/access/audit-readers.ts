import { create, type DescMessage, type DescMethodUnary, type DescService, type MessageInitShape, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createHandlerContext } from "@connectrpc/connect";
import { ApiTokenSchema, UserSchema } from "../../../gen/waypost/v1/access_pb.js";
import { DestinationService } from "../../../gen/waypost/v1/destination_pb.js";
import { SourceService } from "../../../gen/waypost/v1/source_pb.js";
import { TrackingPlanService } from "../../../gen/waypost/v1/tracking_plan_pb.js";
import { selectApiToken } from "../../db/queries/access/api-tokens.js";
import { selectUser } from "../../db/queries/access/users.js";
import type { Queryable } from "../../db/pool.js";
import { tokenToProto, userToProto } from "./access-proto.js";
import type { TargetReader } from "./access-interceptor.js";
import type { TargetKind } from "./rpc-scopes.js";

type Json = Record<string, unknown>;
type Unary<_I extends DescMessage, O extends DescMessage> = (
  request: never,
  context: never,
) => Promise<MessageInitShape<O>> | MessageInitShape<O>;

/**
 * A reader that asks a service's own Get RPC, in process: the audit diff
 * compares what the API shows before and after a change, and the API never
 * shows a secret.
 */
function viaGet<I extends DescMessage, O extends DescMessage>(
  service: DescService,
  method: DescMethodUnary<I, O>,
  impl: Unary<I, O>,
  request: (id: string) => MessageInitShape<I>,
  pick: (response: Json) => unknown,
): TargetReader {
  return async (id) => {
    const context = createHandlerContext({
      service,
      method,
      protocolName: "in-process",
      requestMethod: "POST",
      url: `/${service.typeName}/${method.name}`,
    });
    try {
      const response = await impl(create(method.input, request(id)) as never, context as never);
      const json = toJson(method.output, create(method.output, response)) as Json;
      const picked = pick(json);
      return picked && typeof picked === "object" ? (picked as Json) : undefined;
    } catch (error) {
      if (ConnectError.from(error).code === Code.NotFound || ConnectError.from(error).code === Code.InvalidArgument) return undefined;
      throw error;
    }
  };
}

export interface AuditReaderSources {
  pool: Queryable;
  getSource: Unary<typeof SourceService.method.getSource.input, typeof SourceService.method.getSource.output>;
  getDestination: Unary<typeof DestinationService.method.getDestination.input, typeof DestinationService.method.getDestination.output>;
  getTrackingPlan: Unary<typeof TrackingPlanService.method.getTrackingPlan.input, typeof TrackingPlanService.method.getTrackingPlan.output>;
}

export function createAuditReaders(sources: AuditReaderSources): Partial<Record<TargetKind, TargetReader>> {
  return {
    source: viaGet(
      SourceService,
      SourceService.method.getSource,
      sources.getSource,
      (id) => ({ id }),
      (json) => json.source,
    ),
    destination: viaGet(
      DestinationService,
      DestinationService.method.getDestination,
      sources.getDestination,
      (id) => ({ id }),
      (json) => json.destination,
    ),
    plan: viaGet(
      TrackingPlanService,
      TrackingPlanService.method.getTrackingPlan,
      sources.getTrackingPlan,
      (sourceId) => ({ sourceId }),
      (json) => json.trackingPlan,
    ),
    token: async (id) => {
      const row = await selectApiToken(sources.pool, id);
      return row ? (toJson(ApiTokenSchema, tokenToProto(row)) as Json) : undefined;
    },
    user: async (id) => {
      const row = await selectUser(sources.pool, id);
      return row ? (toJson(UserSchema, userToProto(row)) as Json) : undefined;
    },
  };
}
