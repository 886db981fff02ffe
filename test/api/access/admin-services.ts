import type { DescService } from "@bufbuild/protobuf";
import { AccessService, AuditService, TokenService } from "../../../gen/waypost/v1/access_pb.js";
import { AudienceService } from "../../../gen/waypost/v1/audience_pb.js";
import { DeletionService } from "../../../gen/waypost/v1/deletion_pb.js";
import { DeliveryService } from "../../../gen/waypost/v1/delivery_pb.js";
import { DestinationService } from "../../../gen/waypost/v1/destination_pb.js";
import { HookService } from "../../../gen/waypost/v1/hook_pb.js";
import { IntegrationService } from "../../../gen/waypost/v1/integration_pb.js";
import { ProfileService } from "../../../gen/waypost/v1/profile_pb.js";
import { SourceService } from "../../../gen/waypost/v1/source_pb.js";
import { TrackingService } from "../../../gen/waypost/v1/tracking_pb.js";
import { TrackingPlanService } from "../../../gen/waypost/v1/tracking_plan_pb.js";

/** Every service of gen/: the admin ones, and TrackingService (write keys). */
export const allServices: readonly DescService[] = [
  AccessService,
  TokenService,
  AuditService,
  AudienceService,
  DeletionService,
  DeliveryService,
  DestinationService,
  HookService,
  IntegrationService,
  ProfileService,
  SourceService,
  TrackingPlanService,
  TrackingService,
];

export const adminServices = allServices.filter((service) => service !== TrackingService);

/** "SourceService/CreateSource" for every admin RPC. */
export const adminRpcs: readonly { service: DescService; method: string; key: string; streaming: boolean }[] = adminServices.flatMap(
  (service) =>
    service.methods.map((method) => ({
      service,
      method: method.name,
      key: `${service.name}/${method.name}`,
      streaming: method.methodKind !== "unary",
    })),
);
