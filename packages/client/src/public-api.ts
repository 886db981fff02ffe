/**
 * What both entry points (`index.ts` for Node, `browser.ts`) export alike:
 * types, errors, limits, the WebCrypto signature checks (X-Signature and
 * Standard Webhooks), and the generated
 * service descriptors and messages, so that admin clients can be built with
 * the same package.
 */
export type { AnalyticsClient, CloseOptions } from "./analytics.js";
export type { AnalyticsOptions } from "./options.js";
export { defaults as analyticsDefaults } from "./options.js";
export { defaultRetryPolicy, type RetryPolicy } from "./retry.js";
export type {
  AliasCall,
  AnyCall,
  CallInputs,
  CallRecord,
  CallType,
  CommonFields,
  GroupCall,
  IdentifiedFields,
  IdentifyCall,
  Integrations,
  PageCall,
  Properties,
  ScreenCall,
  TrackCall,
} from "./types.js";
export { AnalyticsError, InvalidCallError, type FailureReason } from "./errors.js";
export { callLimits } from "./validate-call.js";
export { maxRequestBytes } from "./split.js";
export { basicAuthorization, type TrackingClientOptions } from "./auth-transport.js";
export { verifyWebhookSignatureAsync } from "./signature-web.js";
export {
  defaultToleranceMs as standardWebhookToleranceMs,
  verifyStandardWebhook,
  type StandardWebhookOptions,
  type StandardWebhookVerdict,
  type WebhookHeaders,
} from "./standard-webhooks.js";
export { debugMatches } from "./debug-log.js";

export * from "../../../gen/waypost/v1/tracking_pb.js";
export * from "../../../gen/waypost/v1/source_pb.js";
export * from "../../../gen/waypost/v1/destination_pb.js";
export * from "../../../gen/waypost/v1/audience_pb.js";
export * from "../../../gen/waypost/v1/deletion_pb.js";
export * from "../../../gen/waypost/v1/delivery_pb.js";
export * from "../../../gen/waypost/v1/job_pb.js";
export * from "../../../gen/waypost/v1/tracking_plan_pb.js";
