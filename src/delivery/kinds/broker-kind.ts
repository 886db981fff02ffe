import type { Clock } from "../../clock.js";
import type { DeliveryConfig } from "../../config.js";
import type { AttemptResult, ClaimedDelivery } from "../../db/job-table/index.js";
import type { DeliveryContext, DestinationCommon, KindDelivery } from "./kind.js";
import type { BrokerCall, BrokerPublisher, PublisherContext } from "./broker-publisher.js";
import { createRoundGatherer } from "./broker-rounds.js";
import { createTargetCache, type TargetCache } from "./target-cache.js";
import { templateSnakeCase } from "./templates.js";

export interface BrokerKindOptions<Settings, D extends DestinationCommon = DestinationCommon> {
  clock: Clock;
  /** The kind's open publishers (one per destination and revision). */
  publishers: TargetCache<Settings, BrokerPublisher>;
  /** The destination's settings of this kind. */
  settingsOf(destination: D): Settings;
  /** What an attempt records as its target, with no secret: a masked URL, the servers. */
  targetOf(settings: Settings): string;
  /** The source the call came in through ({sourceId} in templates). */
  sourceIdOf(job: ClaimedDelivery): string;
  /** The messaging system, as attempt spans name it (`rabbitmq`, `nats`). */
  system?: string | undefined;
  /** How many of a destination's calls may await their confirms at once (the loop hands over that many). */
  inFlightLimit?: number | undefined;
}

/**
 * A message-broker kind (AMQP, NATS) as the delivery loop sees it: one
 * message per delivery, one attempt, its outcome the broker's confirm or
 * acknowledgement. The calls handed over in one turn go out as one publish
 * round (broker-rounds.ts), so a destination may have many in flight
 * (`inFlightLimit`) at the cost of one socket write per round. Routing uses
 * the stored call's type and event; the body sent is the one the
 * destination's rules shaped.
 */
export function createBrokerKind<Settings, D extends DestinationCommon = DestinationCommon>(
  options: BrokerKindOptions<Settings, D>,
): KindDelivery<D> {
  const rounds = createRoundGatherer(() => options.clock.now());
  return {
    async deliver(job, destination, body) {
      const settings = options.settingsOf(destination);
      const publisher = options.publishers.get(destination.id, destination.revision, () => settings);
      const { result, round } = await rounds.publish(publisher, brokerCall(job, destination.id, options.sourceIdOf(job), body));
      const attempt: AttemptResult = {
        urlIndex: 0,
        url: options.targetOf(settings),
        attemptedAt: round.attemptedAt,
        outcome: result.outcome,
        statusCode: null,
        error: result.error ?? null,
        latencyMs: round.latencyMs,
        responseBody: null,
        // A round is one batch operation: its attempt is written once for its calls.
        batch: round.batch,
        // The loop adds the revision and the body sent when the rules changed it.
      };
      return [attempt];
    },
    inFlightLimit: () => options.inFlightLimit,
    label: (destination) => options.targetOf(options.settingsOf(destination)),
    span: () => ({
      name: "publish",
      attributes: { "messaging.system": options.system ?? "broker", "messaging.operation.type": "publish" },
    }),
    tick() {
      void options.publishers.sweep();
    },
    openDestinations: () => options.publishers.destinations(),
    // A deleted or changed destination's connection closes now, not when it goes idle or its next call comes.
    reconcile: (current) => options.publishers.reconcile(current),
    close: () => options.publishers.close(),
  };
}

/** A broker whose destination sent nothing for this long has its connection closed (it reopens on the next call). */
const idleCloseMs = 5 * 60_000;

/** What a broker kind's module says of itself; the rest of its delivery half is the same for every broker. */
export interface BrokerKindParts<Settings, D> {
  /** The destination's settings of this kind. */
  settingsOf(destination: D): Settings;
  /** A destination's publisher (opening nothing until its first publish). */
  createPublisher(settings: Settings, context: PublisherContext): BrokerPublisher;
  /** What an attempt records as its target, with no secret. */
  targetOf(settings: Settings): string;
  /** The messaging system, as attempt spans name it. */
  system: string;
}

/**
 * The delivery half of a broker kind: a publisher per destination and
 * revision (closed after five idle minutes), named to the broker by its
 * destination, publishing in rounds.
 */
export function brokerDelivery<Settings, D extends DestinationCommon>(
  { clock, config, guard, logger }: DeliveryContext,
  parts: BrokerKindParts<Settings, D>,
): KindDelivery<D> {
  return createBrokerKind<Settings, D>({
    clock,
    publishers: createTargetCache({
      clock,
      idleMs: idleCloseMs,
      create: (destinationId, settings: Settings) =>
        parts.createPublisher(settings, { guard, timeoutMs: config.timeoutMs, logger, connectionName: `waypost ${destinationId}` }),
    }),
    settingsOf: parts.settingsOf,
    targetOf: parts.targetOf,
    sourceIdOf: (job) => job.sourceId ?? "",
    system: parts.system,
    inFlightLimit: brokerInFlight(config),
  });
}

/**
 * Calls of one broker destination a process has awaiting confirms at once:
 * half the process's slots (512 by default), or the per-destination
 * concurrency when that is more. A confirm costs the broker little and
 * comes back in rounds, so a broker destination takes a claim's worth at
 * once rather than a webhook endpoint's 64.
 */
export function brokerInFlight(config: Pick<DeliveryConfig, "concurrency" | "perDestinationConcurrency">): number {
  return Math.max(config.perDestinationConcurrency, Math.floor(config.concurrency / 2));
}

/** The call as a publisher takes it: the body to send, and what names and routes it. */
export function brokerCall(job: ClaimedDelivery, destinationId: string, sourceId: string, body: string): BrokerCall {
  const { type, event } = routingFields(job.payload);
  return {
    messageId: job.messageId,
    type,
    event,
    sourceId,
    destinationId,
    body,
    timestamp: job.receivedAt,
    traceparent: job.traceparent,
    tracestate: job.tracestate,
  };
}

// The stored call starts {"version":1,"type":"…" and a track call's top-level "event" comes
// before its properties (src/ingest/payload.ts): a quote inside a JSON string is escaped, so
// the first `,"event":` is the top-level one. Read without parsing the whole body.
const typePattern = /^\{"version":\d+,"type":"([a-z_]+)"/;
const eventPattern = /,"event":("(?:[^"\\]|\\.)*")/;

/** The call's type and, for a track call, its event, from the stored payload. */
export function routingFields(payload: string): { type: string; event: string | undefined } {
  const type = typePattern.exec(payload)?.[1];
  if (type === undefined) {
    // Not the stored layout (a test's hand-written payload): parse it.
    const parsed = JSON.parse(payload) as { type?: unknown; event?: unknown };
    // A type is a token of a routing key or subject: never dots or wildcards.
    return { type: templateSnakeCase(String(parsed.type ?? "")), event: typeof parsed.event === "string" ? parsed.event : undefined };
  }
  if (type !== "track") return { type, event: undefined };
  const quoted = eventPattern.exec(payload)?.[1];
  return { type, event: quoted === undefined ? undefined : (JSON.parse(quoted) as string) };
}
