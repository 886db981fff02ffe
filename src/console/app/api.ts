import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { AccessService, AuditService, TokenService } from "../../../gen/waypost/v1/access_pb.js";
import { AudienceService } from "../../../gen/waypost/v1/audience_pb.js";
import { DeletionService } from "../../../gen/waypost/v1/deletion_pb.js";
import { DeliveryService } from "../../../gen/waypost/v1/delivery_pb.js";
import { DestinationService } from "../../../gen/waypost/v1/destination_pb.js";
import { HookService } from "../../../gen/waypost/v1/hook_pb.js";
import { IntegrationService } from "../../../gen/waypost/v1/integration_pb.js";
import { ProfileService } from "../../../gen/waypost/v1/profile_pb.js";
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
  access: Client<typeof AccessService>;
  tokens: Client<typeof TokenService>;
  audit: Client<typeof AuditService>;
  profiles: Client<typeof ProfileService>;
}

/**
 * How the console proves who it is: a token typed on the sign-in page (the
 * admin token or an API token), sent as a Bearer header; or the session
 * the identity provider's sign-in left in a cookie, which the browser sends
 * itself, with the session's CSRF token in a header beside it.
 */
export type Credential = { token: string } | { csrfToken: string };

/** The headers a credential adds to every call. */
function credentialHeaders(credential: Credential): Interceptor {
  return (next) => (request) => {
    if ("token" in credential) request.header.set("Authorization", `Bearer ${credential.token}`);
    else request.header.set("X-CSRF-Token", credential.csrfToken);
    return next(request);
  };
}

/**
 * The generated admin clients over the Connect web transport, on the page's
 * own origin. Cookies go with every call (same origin only): a session's
 * cookie is how the server knows it.
 */
export function createApi(credential: Credential): Api {
  const transport = createConnectTransport({
    baseUrl: location.origin,
    useBinaryFormat: true,
    interceptors: [credentialHeaders(credential)],
    fetch: (input, init) => fetch(input, { ...init, credentials: "same-origin" }),
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
    access: createClient(AccessService, transport),
    tokens: createClient(TokenService, transport),
    audit: createClient(AuditService, transport),
    profiles: createClient(ProfileService, transport),
  };
}
