import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter, Interceptor, ServiceImpl } from "@connectrpc/connect";
import type pg from "pg";
import { AccessService, AuditService, TokenService } from "../../gen/waypost/v1/access_pb.js";
import { AudienceService } from "../../gen/waypost/v1/audience_pb.js";
import { DeletionService } from "../../gen/waypost/v1/deletion_pb.js";
import { DeliveryService } from "../../gen/waypost/v1/delivery_pb.js";
import { DestinationService } from "../../gen/waypost/v1/destination_pb.js";
import { HookService } from "../../gen/waypost/v1/hook_pb.js";
import { IntegrationService } from "../../gen/waypost/v1/integration_pb.js";
import { ProfileService } from "../../gen/waypost/v1/profile_pb.js";
import { SourceService } from "../../gen/waypost/v1/source_pb.js";
import { TrackingService } from "../../gen/waypost/v1/tracking_pb.js";
import { TrackingPlanService } from "../../gen/waypost/v1/tracking_plan_pb.js";
import type { Clock } from "../clock.js";
import type { JobTableDriver } from "../db/job-table/index.js";
import type { AddressGuard } from "../outbound/address-guard.js";
import type { TransformSandboxes } from "../sandbox/transform-sandbox.js";
import type { Ingestor } from "../ingest/ingestor.js";
import { limits } from "../ingest/limits.js";
import type { IngestAdmission } from "../http/ingest-admission.js";
import type { BodyTiming } from "../http/request-body.js";
import type { Logger } from "../logger.js";
import type { TrackingPlans } from "../plans/tracking-plans.js";
import { tracingOff, type Tracing } from "../tracing/tracing.js";
import type { AuditLog } from "../access/audit-log.js";
import { createAccessInterceptor } from "./access/access-interceptor.js";
import { createAccessService } from "./access/access-service.js";
import { createAuditReaders } from "./access/audit-readers.js";
import { createAuditService } from "./access/audit-service.js";
import { createTokenService } from "./access/token-service.js";
import { createAdminReadDeadline } from "./admin-read-deadline.js";
import { createAudienceService } from "./audience-service.js";
import type { Authenticator, GateRequest } from "./auth.js";
import { createDeletionService } from "./deletion-service.js";
import { createDeliveryService } from "./delivery-service.js";
import { createDestinationService } from "./destination-service.js";
import { createHookService } from "./hook-service.js";
import { createIntegrationService } from "./integration-service.js";
import { createRpcAdapter, type RpcNodeHandler } from "./transport/rpc-adapter.js";
import { createDomainErrorInterceptor } from "./domain-errors.js";
import { createErrorLogInterceptor } from "./transport/rpc-error-log.js";
import { createRequestSpanInterceptor } from "./request-span.js";
import { createStorableRequestInterceptor } from "./storable-request.js";
import { createProfileService } from "./profile-service.js";
import { createSourceService } from "./source-service.js";
import { createTrackingPlanService } from "./tracking-plan-service.js";
import { createTrackingService } from "./tracking-service.js";
import { registerWireTrackingService } from "./tracking-wire-service.js";

export interface RpcHandlersOptions {
  pool: pg.Pool;
  clock: Clock;
  ingestor: Ingestor;
  auth: Authenticator;
  logger: Logger;
  /** Judges literal webhook addresses when a destination is saved (WAYPOST_ALLOW_PRIVATE_DESTINATIONS). */
  addressGuard: AddressGuard;
  interceptors?: Interceptor[];
  /** TrackingService's bodies: read whole first, with the deadline and minimum rate of /v1 (absent: Connect reads them). */
  bodies?: BodyTiming;
  /** Turns for TrackingService's work, shared with /v1 (http/ingest-admission.ts); absent: no limit. */
  ingestAdmission?: IngestAdmission | undefined;
  /** Called after a background job (a backfill, a bulk retry) is stored: this process's runner takes it at once. */
  onJobCreated?: () => void;
  /** Checks transforms' syntax and runs TestDestination's. */
  sandboxes: TransformSandboxes;
  /** Bulk retries leave out deliveries whose messages are past retention. */
  retentionMs: number;
  /** After RotateSigningSecret, the previous secret keeps signing this long. */
  signingSecretOverlapMs?: number;
  /** New destinations of the batching kinds read calls from the call log (WAYPOST_CALL_LOG). */
  callLog?: boolean;
  /**
   * DeliveryService's reads (searches, the finish feed, stats) run here, on
   * a pool of their own with a statement timeout, so that many or slow
   * admin reads queue behind each other instead of taking the connections
   * ingest and delivery need.
   */
  adminReads: { pool: pg.Pool; statementTimeoutMs: number; maxResponseBytes: number };
  /** TrackingPlanService's plans and violations. */
  trackingPlans: TrackingPlans;
  /** Server spans of tracking requests, and the trace context their calls store (off: passed through). */
  tracing?: Tracing | undefined;
  /** ReprocessHookRequests set a webhook source's requests back to pending: a processor should look now. */
  onHookRequestsQueued?: ((sourceId: string) => void) | undefined;
  /** The job table's driver (one Postgres's or Citus's): how deliveries are read and replayed, destinations deleted, and calls queued by syncs and deletions. */
  jobTable: JobTableDriver;
  /** Where every change made through the admin RPCs is recorded. */
  audit: AuditLog;
  /** Identity resolution, when on: its identifier types (what a deletion request may name). Off: deletions by userId alone. */
  identity: { types: readonly string[] } | undefined;
}

export interface RpcHandlers {
  tracking: RpcNodeHandler;
  admin: RpcNodeHandler;
  /** Paths under this go to `tracking`. */
  trackingPrefix: string;
}

/**
 * Read limits per RPC, counted after decompression and checked only after
 * the credentials: a unary audience or computed-trait sync carries a whole
 * membership list; a streamed sync's messages are chunks of one; every other
 * admin request is a few kilobytes (a destination with five webhooks and
 * their headers stays under 150 KB).
 */
export const rpcReadLimits = {
  tracking: limits.maxRequestBytes,
  admin: 1024 * 1024,
  unarySync: 64 * 1024 * 1024,
  streamedSyncMessage: 64 * 1024 * 1024,
} as const;

const syncMethods = new Set(["SyncAudience", "SyncComputedTrait"]);
const streamedSyncMethods = new Set(["StreamSyncAudience", "StreamSyncComputedTrait"]);

/**
 * Two handlers: TrackingService with the 500 KB request limit, and the admin
 * services. Both speak Connect, gRPC and gRPC-Web, and check credentials
 * before reading a body.
 */
export function createRpcHandlers(options: RpcHandlersOptions): RpcHandlers {
  const interceptors = [
    createErrorLogInterceptor(options.logger),
    options.auth.interceptor,
    ...(options.interceptors ?? []),
    createDomainErrorInterceptor(),
  ];
  // Unknown fields are errors, so a typo ("trak", "userID") is reported, not dropped.
  const jsonOptions = { ignoreUnknownFields: false };
  const gate = (req: GateRequest, service: DescService, method: string) => options.auth.gate(req, service, method);
  const tracking = createRpcAdapter({
    readMaxBytes: rpcReadLimits.tracking,
    maxBatchMessages: limits.maxBatchMessages,
    // Its size refusals carry a RequestTooLarge detail, so clients split rather than retry.
    maxRequestBytes: limits.maxRequestBytes,
    bodies: options.bodies,
    admission: options.ingestAdmission,
    jsonOptions,
    // Outermost, so that a refused key or a bad request ends its span as failed.
    interceptors: [createRequestSpanInterceptor(options.tracing ?? tracingOff), ...interceptors],
    gate,
    logger: options.logger,
    routes(router: ConnectRouter) {
      router.service(TrackingService, createTrackingService({ ingestor: options.ingestor }));
    },
    // Binary requests skip Struct messages: their Structs become stored JSON text straight from the wire.
    binaryRoutes(router: ConnectRouter) {
      registerWireTrackingService(router, options.ingestor);
    },
  });
  const services = createAdminServices(options);
  // After the gate's scope check: a limited principal's sources, and the audit row of each change.
  const access = createAccessInterceptor({
    pool: options.pool,
    audit: options.audit,
    readers: createAuditReaders({ pool: options.pool, ...services }),
  });
  const admin = createRpcAdapter({
    readMaxBytes: rpcReadLimits.admin,
    jsonOptions,
    // Inside the domain-error mapping, which turns a refused text into invalid_argument.
    interceptors: [
      ...interceptors.slice(0, 2),
      access,
      ...interceptors.slice(2),
      createStorableRequestInterceptor(),
      createAdminReadDeadline(options.adminReads.statementTimeoutMs),
    ],
    gate,
    logger: options.logger,
    routes(router: ConnectRouter) {
      router.service(SourceService, services.source);
      router.service(DestinationService, services.destination);
      router.service(AccessService, createAccessService({ pool: options.pool, clock: options.clock }));
      router.service(TokenService, createTokenService({ pool: options.pool, clock: options.clock }));
      router.service(AuditService, createAuditService({ pool: options.pool }));
      router.service(ProfileService, createProfileService({ pool: options.adminReads.pool }));
      router.service(IntegrationService, createIntegrationService());
      router.service(
        DeliveryService,
        createDeliveryService({
          pool: options.adminReads.pool,
          maxResponseBytes: options.adminReads.maxResponseBytes,
          clock: options.clock,
          onJobCreated: options.onJobCreated,
          retentionMs: options.retentionMs,
          jobTable: options.jobTable,
        }),
      );
      router.service(
        HookService,
        createHookService({
          pool: options.pool,
          clock: options.clock,
          sandboxes: options.sandboxes,
          onRequeued: options.onHookRequestsQueued,
        }),
      );
      registerAudienceService(router, createAudienceService({ pool: options.pool, clock: options.clock, jobTable: options.jobTable }));
      router.service(
        DeletionService,
        createDeletionService({ pool: options.pool, clock: options.clock, jobTable: options.jobTable, identity: options.identity }),
      );
      router.service(TrackingPlanService, services.trackingPlan);
    },
  });
  return { tracking, admin, trackingPrefix: `/${TrackingService.typeName}/` };
}

/** The services whose Get RPCs the audit log also reads, built once. */
function createAdminServices(options: RpcHandlersOptions) {
  const source = createSourceService({
    pool: options.pool,
    onWriteKeyChange: () => options.auth.forgetWriteKeys(),
    sandboxes: options.sandboxes,
  });
  const destination = createDestinationService({
    pool: options.pool,
    clock: options.clock,
    addressGuard: options.addressGuard,
    signingSecretOverlapMs: options.signingSecretOverlapMs,
    sandboxes: options.sandboxes,
    onJobCreated: options.onJobCreated,
    jobTable: options.jobTable,
    callLog: options.callLog,
  });
  const trackingPlan = createTrackingPlanService({
    plans: options.trackingPlans,
    clock: options.clock,
    maxResponseBytes: options.adminReads.maxResponseBytes,
  });
  return {
    source,
    destination,
    trackingPlan,
    getSource: source.getSource.bind(source),
    getDestination: destination.getDestination.bind(destination),
    getTrackingPlan: trackingPlan.getTrackingPlan.bind(trackingPlan),
  };
}

/**
 * Method by method, so the sync RPCs get their larger read limit and the rest
 * the admin one. A loop over the service's methods sees each as the union of
 * them all, which no one implementation matches: hence the one cast here,
 * rather than a hand-kept list that could miss a new method.
 */
function registerAudienceService(router: ConnectRouter, impl: ServiceImpl<typeof AudienceService>): void {
  for (const method of AudienceService.methods) {
    const readMaxBytes = syncMethods.has(method.name)
      ? rpcReadLimits.unarySync
      : streamedSyncMethods.has(method.name)
        ? rpcReadLimits.streamedSyncMessage
        : rpcReadLimits.admin;
    const methodImpl = (impl as Record<string, unknown>)[method.localName];
    router.rpc(method as never, (methodImpl as (...args: unknown[]) => unknown).bind(impl) as never, { readMaxBytes });
  }
}
