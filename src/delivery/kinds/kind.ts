import type pg from "pg";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  Destination as DestinationProto,
  DestinationKind as KindProto,
  DestinationSchema,
  TestedCall,
  TestedCallSchema,
} from "../../../gen/waypost/v1/destination_pb.js";
import type { Clock } from "../../clock.js";
import type { DeliveryConfig } from "../../config.js";
import type { AttemptResult, ClaimedDelivery } from "../../db/job-table/index.js";
import type { KindColumns, RoutingColumn } from "../../db/queries/destinations.js";
import type { Logger } from "../../logger.js";
import type { Metrics } from "../../metrics.js";
import type { AddressGuard } from "../../outbound/address-guard.js";
import type { CallMatcher } from "../../routing/route-rules.js";
import type { SpanAttributes, Tracing } from "../../tracing/tracing.js";

/** What every destination has, whatever its kind: as the delivery loop reads it. */
export interface DestinationCommon {
  id: string;
  /** Named on each attempt's span when tracing is on. */
  name: string;
  enabled: boolean;
  ordering: "none" | "per_user";
  /** Moves on with every settings change (the etag). */
  revision: number;
  drop_fields: string[];
  /** "" is no transform. */
  transform: string;
  /** Calls carry context.profileId (identity resolution). */
  add_profile_id: boolean;
}

/** A destination with the settings of its kind `K`, under the kind's own key: `{kind: "webhook", webhook: {...}}`. */
export type DestinationOf<K extends string, S> = DestinationCommon & { kind: K } & { [key in K]: S };

/** A destination's settings as a request brings them: the create or update message. */
export type DestinationInput = DestinationProto;
/** The part of a Destination response a kind writes (its own fields, masked). */
export type DestinationOutput = Exclude<MessageInitShape<typeof DestinationSchema>, DestinationProto>;

/** One field of a Destination message a kind owns (its settings), by update-mask path. */
export interface KindField {
  /** The update-mask path (snake_case), also the message field it reads. */
  path: string;
  /** The field in camelCase, as errors name it: `destination.${name}`. */
  name: string;
  /** What it is, for "a Postgres destination has no ..." */
  describe: string;
  /** Where calls go: a change probes the destination at once and wakes the workers. */
  moves?: boolean;
  /** Whether the input sets it (an empty update mask means "every field that is set"). */
  given(input: DestinationInput, generateSigningSecret: boolean): boolean;
}

/** What reading a kind's settings from a request may use. */
export interface ReadContext {
  /** The fields the request changes (their update-mask paths); on create, every field of the kind. */
  paths: ReadonlySet<string>;
  /** On update, what is stored: masked secrets sent back keep these. */
  current?: unknown;
  /** Literal private addresses are refused when saved (the guard of deliveries). */
  guard: AddressGuard;
  now: Date;
  /** Create only: the Standard Webhooks secret generated as asked (shown once in the response). */
  generatedSigningSecret?: string | undefined;
}

/**
 * The settings half of a kind: reads and checks its settings from a request
 * (throwing InvalidInputError naming the field path), shows them masked, and
 * maps them to and from the columns they are stored in.
 */
export interface KindSettings<S> {
  /** The fields of the Destination message this kind owns; another kind's are refused on it. */
  fields: readonly KindField[];
  /** The settings a request gives (create: `current` unset; update: only the changed paths). */
  read(input: DestinationInput, context: ReadContext & { current?: S }): S;
  /** A slower look before they are saved (connecting once, say), outside any transaction; throws InvalidInputError. */
  check?(settings: S, current: S | undefined, pool: pg.Pool): Promise<void>;
  /** The settings as responses show them: secrets masked, with has_* flags. */
  toProto(settings: S, now: Date): DestinationOutput;
  /** To the stored columns: its own (the others are stored empty). */
  toRow(settings: S): Partial<KindColumns>;
  fromRow(row: KindColumns): S;
  /**
   * RotateSigningSecret: a new secret that signs from now on, the current
   * ones signing `overlapMs` longer (the webhook kind). A kind without it
   * has no signing secrets, and the API refuses the call for it.
   */
  rotateSigningSecret?(settings: S, now: Date, overlapMs: number): { settings: S; secret: string };
}

/** What the delivery runtime gives each kind's delivery half, built once per process. */
export interface DeliveryContext {
  pool: pg.Pool;
  config: DeliveryConfig;
  clock: Clock;
  logger: Logger;
  metrics?: Metrics | undefined;
  guard: AddressGuard;
  tracing: Tracing;
  /** Outbound HTTP (the webhook kind): the runtime's per-destination clients. */
  http: HttpSender;
}

/** Sends webhook requests through a destination's own HTTP client (see destination-dispatchers.ts). */
export type HttpSender = <T>(destinationId: string, send: (dispatcher: import("undici").Dispatcher) => Promise<T>) => Promise<T>;

/**
 * The delivery half of a kind: what the loop hands a claimed delivery to once
 * it is due and its destination is enabled. A kind only delivers and
 * reports; the loop, the scheduler, leases, the retry schedule, the circuit
 * breaker, stats and replays act on the attempts it reports, the same for
 * every kind.
 */
export interface KindDelivery<D> {
  /**
   * Delivers one call and resolves with its attempts once its outcome is
   * known: one attempt per request for webhooks; for a batching kind, one
   * attempt when its batch commits or fails. An attempt's outcome is
   * `success`, `retryable` (retried on the normal schedule) or `permanent`
   * (failed, with its error). It never rejects. `body` is the call as the
   * destination's rules shaped it. The attempt objects must be this
   * call's own (the loop sets its revision and body sent on them in place):
   * calls of one batch share the `batch` ref, never an attempt object.
   * `earlier` is given to an "every-part" kind on a retry (see
   * CompletionRule).
   */
  deliver(job: ClaimedDelivery, destination: D, body: string, earlier?: EarlierAttempts): Promise<AttemptResult[]>;
  /** Where an attempt of this destination goes, as attempts record it (`url`) when none was made (a failed transform). */
  label(destination: D): string;
  /**
   * The span of an attempt, for kinds that do not start their own (the
   * webhook kind starts one per request, to send its traceparent):
   * its name and attributes beside the ones every attempt has.
   */
  span?(destination: D): { name: string; attributes: SpanAttributes };
  /** How many of a destination's deliveries the loop hands over at once; undefined: the configured per-destination concurrency. */
  inFlightLimit?(destination: D): number | undefined;
  /**
   * How the kind fills its batches: up to `calls` calls, waiting at most
   * `waitMs` after the first. The call log's loader waits as long for a
   * page of fewer calls, so a page makes the kind's batches (undefined:
   * every page is sent as it is read).
   */
  batchWindow?(destination: D): { calls: number; waitMs: number } | undefined;
  /** Each turn of the loop: work due by time (a batch's flush interval, idle connections), by the injectable clock. */
  tick?(): void;
  /** Delivers everything held now without waiting for its time (on stop, or when settling). */
  flush?(): void;
  /** Destinations with something open here (a pool, a connection): checked against their settings now and then. */
  openDestinations?(): string[];
  /**
   * Closes what is open for destinations deleted or whose settings moved
   * (`current`: the destinations of openDestinations() as they are now; a
   * missing one is gone), after delivering what they hold.
   */
  reconcile?(current: ReadonlyMap<string, D>): void;
  /** Delivers what it holds, then releases its resources (connections, pools). */
  close(): Promise<void>;
}

/**
 * How a delivery's attempts decide it (completion.ts), as its kind declares:
 * - "any-request": delivered when any attempt succeeds (a webhook's URLs,
 *   one publish, one warehouse load); failed when none can be retried.
 * - "every-part": the call is sent as parts, each attempt entry naming its
 *   part (`AttemptResult.subscription`: an integration's subscriptions).
 *   Delivered once every part has succeeded, in this attempt or an earlier
 *   one; one permanent failure fails it; a retryable one retries it. On a
 *   retry the runtime reads which parts succeeded before and hands them to
 *   `deliver` (EarlierAttempts), which runs only the others.
 */
export type CompletionRule = "any-request" | "every-part";

/** What the runtime tells an "every-part" kind about a call's earlier attempts, on a retry. */
export interface EarlierAttempts {
  /** The parts that succeeded in an earlier attempt (every entry of theirs a success): not to be run again. */
  succeededParts: ReadonlySet<string>;
}

/**
 * Routing by the kind itself, beside the filter and consent every
 * destination has: a call the matcher refuses gets no delivery (its fate
 * FILTERED, reason "subscriptions"). Ingest, backfills and TestDestination
 * ask it; a destination of such a kind is read by routing whatever its
 * filter.
 */
export interface KindRouting<S> {
  /**
   * The kind's column its matcher reads (a routing column of
   * db/queries/destinations.ts): routing selects it, and a row with it set is
   * one of this kind's.
   */
  column: RoutingColumn;
  /**
   * Compiled once per destination and revision, from stored settings (read
   * defensively: a stricter version may find them wanting) or a draft's.
   * Views of the call it needs (an integration's Segment event) go through
   * `call.view`, made once per call for every destination.
   */
  matcher(settings: S): CallMatcher;
}

/** A call TestDestination runs through a draft, once its routing rules let it through and its body is shaped. */
export interface TestCall {
  /** The body as the draft's rules shaped it. */
  body: string;
  receivedAt: Date;
  sentAt: Date | null;
}

/** What a draft would do with a call, nothing sent: a TestedCall's fields beside the call's own (ids, type, event). */
export type TestedCallOutcome = Omit<
  Exclude<MessageInitShape<typeof TestedCallSchema>, TestedCall>,
  "messageId" | "sourceId" | "type" | "event"
>;

/** A draft's test of one call at a time, made once per TestDestination request. */
export type DraftTester = (call: TestCall) => Promise<TestedCallOutcome>;

/**
 * A kind of destination, registered once (registry.ts): its name (the
 * stored `kind`), its proto value, its settings half and its delivery half.
 */
export interface KindModule<K extends string = string, S = unknown> {
  name: K;
  /** As messages name it: "a Postgres destination has no ...". */
  label: string;
  proto: KindProto;
  settings: KindSettings<S>;
  /**
   * The requests an attempt of this call would send now, as the delivery
   * views show them (headers unmasked: the caller masks): kinds that send
   * requests with headers only.
   */
  preview?(job: ClaimedDelivery, destination: DestinationOf<K, S>, now: Date): Array<{ url: string; headers: Record<string, string> }>;
  /**
   * Its requests are built from the call, not the call itself (an
   * integration's actions): each attempt keeps what it sent
   * (AttemptResult.request), and the delivery views show those, not the
   * stored call, as sent.
   */
  requestsInAttempts?: boolean;
  /** How its attempts decide a delivery; "any-request" when unset. */
  completion?: CompletionRule;
  routing?: KindRouting<S>;
  /**
   * TestDestination on a draft of this kind (its settings read as a create
   * or an update would): what each call would do, nothing sent. Unset: a
   * call the routing rules let through is SEND with its shaped body.
   */
  test?(settings: S, now: () => Date): DraftTester;
  /**
   * It reads the call log only (a lake): its destinations go on the log
   * when created, whatever WAYPOST_CALL_LOG says, and cannot be created
   * where the job table has no log (Citus).
   */
  callLogOnly?: boolean;
  /**
   * Whether a destination with these settings takes every call as stored
   * (a lake's archive): the destination's filter, consent, the calls'
   * integrations object, dropped fields and transform do not apply to it.
   */
  asStored?(settings: S): boolean;
  createDelivery(context: DeliveryContext): KindDelivery<DestinationOf<K, S>>;
}

/** Declares a kind, keeping its name, settings and delivery types together. */
export function defineKind<K extends string, S>(kind: KindModule<K, S>): KindModule<K, S> {
  return kind;
}
