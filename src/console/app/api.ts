import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { AudienceService } from "../../../gen/waypost/v1/audience_pb.js";
import { DeletionService } from "../../../gen/waypost/v1/deletion_pb.js";
import { DeliveryService } from "../../../gen/waypost/v1/delivery_pb.js";
import { DestinationService } from "../../../gen/waypost/v1/destination_pb.js";
import { HookService } from "../../../gen/waypost/v1/hook_pb.js";
import { IntegrationService } from "../../../gen/waypost/v1/integration_pb.js";
import { SourceService } from "../../../gen/waypost/v1/source_pb.js";
import { TrackingPlanService } from "../../../gen/waypost/v1/tracking_plan_pb.js";

export interface Api {
  sources: Client<typeof SourceService>;
  destinations: Client<typeof DestinationService>;
  deliveries: Client<typeof DeliveryService>;
  audiences: Client<typeof AudienceService>;
  deletions: Client<typeof DeletionService>;
  plans: Client<typeof TrackingPlanService>;
  integrations: Client<typeof IntegrationService>;
  hooks: Client<typeof HookService>;
}

/**
 * The generated admin clients over the Connect web transport, on the page's
 * own origin. Every call carries the token as a Bearer header.
 */
export function createApi(token: string): Api {
  const bearer: Interceptor = (next) => (request) => {
    request.header.set("Authorization", `Bearer ${token}`);
    return next(request);
  };
  const transport = createConnectTransport({
    baseUrl: location.origin,
    useBinaryFormat: true,
    interceptors: [bearer],
  });
  return {
    sources: createClient(SourceService, transport),
    destinations: createClient(DestinationService, transport),
    deliveries: createClient(DeliveryService, transport),
    audiences: createClient(AudienceService, transport),
    deletions: createClient(DeletionService, transport),
    plans: createClient(TrackingPlanService, transport),
    integrations: createClient(IntegrationService, transport),
    hooks: createClient(HookService, transport),
  };
}
