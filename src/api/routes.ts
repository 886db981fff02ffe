import type { ConnectRouter, Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type pg from "pg";
import { AudienceService } from "../../gen/waypost/v1/audience_pb.js";
import { DeletionService } from "../../gen/waypost/v1/deletion_pb.js";
import { DeliveryService } from "../../gen/waypost/v1/delivery_pb.js";
import { DestinationService } from "../../gen/waypost/v1/destination_pb.js";
import { SourceService } from "../../gen/waypost/v1/source_pb.js";
import { TrackingService } from "../../gen/waypost/v1/tracking_pb.js";
import type { Clock } from "../clock.js";
import type { Ingestor } from "../ingest/ingestor.js";
import { limits } from "../ingest/limits.js";
import { createAudienceService } from "./audience-service.js";
import type { Authenticator } from "./auth.js";
import { createDeletionService } from "./deletion-service.js";
import { createDeliveryService } from "./delivery-service.js";
import { createDestinationService } from "./destination-service.js";
import { createSizeLimitedAdapter } from "./request-too-large.js";
import { createSourceService } from "./source-service.js";
import { createTrackingService } from "./tracking-service.js";

export interface RpcHandlersOptions {
  pool: pg.Pool;
  clock: Clock;
  ingestor: Ingestor;
  auth: Authenticator;
  interceptors?: Interceptor[];
  /** After RotateSigningSecret, the previous secret keeps signing this long. */
  signingSecretOverlapMs?: number;
}

type NodeHandler = ReturnType<typeof connectNodeAdapter>;

export interface RpcHandlers {
  tracking: NodeHandler;
  admin: NodeHandler;
  /** Paths under this go to `tracking`. */
  trackingPrefix: string;
}

/** Admin requests (a full audience sync in one unary call) may be larger than tracking ones. */
const adminReadMaxBytes = 64 * 1024 * 1024;

/**
 * Two Connect adapters: TrackingService with the 500 KB request limit of
 * docs/api.md, and the admin services. Both speak Connect, gRPC and gRPC-Web.
 */
export function createRpcHandlers(options: RpcHandlersOptions): RpcHandlers {
  const interceptors = [options.auth.interceptor, ...(options.interceptors ?? [])];
  // Unknown fields are errors, so a typo ("trak", "userID") is reported, not dropped.
  const jsonOptions = { ignoreUnknownFields: false };
  // Its size refusals carry a RequestTooLarge detail, so clients split rather than retry.
  const tracking = createSizeLimitedAdapter({
    maxRequestBytes: limits.maxRequestBytes,
    jsonOptions,
    interceptors,
    routes(router: ConnectRouter) {
      router.service(TrackingService, createTrackingService({ ingestor: options.ingestor }));
    },
  });
  const admin = connectNodeAdapter({
    readMaxBytes: adminReadMaxBytes,
    jsonOptions,
    interceptors,
    routes(router: ConnectRouter) {
      router.service(
        SourceService,
        createSourceService({ pool: options.pool, onWriteKeyChange: () => options.auth.forgetWriteKeys() }),
      );
      router.service(
        DestinationService,
        createDestinationService({ pool: options.pool, clock: options.clock, signingSecretOverlapMs: options.signingSecretOverlapMs }),
      );
      router.service(DeliveryService, createDeliveryService({ pool: options.pool, clock: options.clock }));
      router.service(
        AudienceService,
        createAudienceService({ pool: options.pool, clock: options.clock }),
      );
      router.service(DeletionService, createDeletionService({ pool: options.pool, clock: options.clock }));
    },
  });
  return { tracking, admin, trackingPrefix: `/${TrackingService.typeName}/` };
}
