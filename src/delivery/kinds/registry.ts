import { DestinationKind as KindProto } from "../../../gen/waypost/v1/destination_pb.js";
import type { ClaimedDelivery } from "../../db/job-table/index.js";
import { InvalidInputError } from "../../errors.js";
import { type DestinationConfigRow, emptyKindColumns, type KindColumns } from "../../db/queries/destinations.js";
import type { CallMatcher } from "../../routing/route-rules.js";
import type { KindName as DescribedKind } from "./descriptors.js";
import type {
  CompletionRule,
  DeliveryContext,
  DestinationCommon,
  DestinationOf,
  DraftTester,
  KindDelivery,
  KindModule,
  KindRouting,
  KindSettings,
} from "./kind.js";
import { amqpKind } from "./amqp/index.js";
import { integrationKind } from "./integration/index.js";
import { lakeKind } from "./lake/index.js";
import { natsKind } from "./nats/index.js";
import { postgresKind } from "./postgres/index.js";
import { webhookKind } from "./webhook/index.js";

/**
 * Every kind of destination, listed once. The API, the database rows, the
 * delivery runtime, the CLI and the console ask this list; none of them
 * names a kind. The first is the kind of a create that names none.
 */
const kinds = [webhookKind, postgresKind, amqpKind, natsKind, integrationKind, lakeKind] as const;

type Kind = (typeof kinds)[number];
/** The stored names of the kinds: "webhook" | "postgres" | ... */
export type KindName = Kind["name"];
// The clients' list (descriptors.ts) names the same kinds: either list missing one does not compile.
const sameKinds: [KindName] extends [DescribedKind] ? ([DescribedKind] extends [KindName] ? true : false) : false = true;
void sameKinds;

type DestinationOfKind<M> = M extends KindModule<infer K, infer S> ? DestinationOf<K, S> : never;
/** A destination as the delivery loop holds it: what every destination has, and its kind's settings under the kind's name. */
export type Destination = DestinationOfKind<Kind>;

/** Any destination, its settings not looked at (what code working with every kind passes around). */
export type AnyDestination = DestinationCommon & { kind: string };

/** A kind with its settings type erased: what code looping over every kind works with. */
export interface RegisteredKind {
  name: KindName;
  label: string;
  proto: KindProto;
  settings: KindSettings<unknown>;
  preview?(job: ClaimedDelivery, destination: AnyDestination, now: Date): Array<{ url: string; headers: Record<string, string> }>;
  requestsInAttempts?: boolean;
  completion?: CompletionRule;
  routing?: KindRouting<unknown>;
  test?(settings: unknown, now: () => Date): DraftTester;
  callLogOnly?: boolean;
  asStored?(settings: unknown): boolean;
  createDelivery(context: DeliveryContext): KindDelivery<AnyDestination>;
}

// The one place the kinds' own types are let go of: each module's halves
// agree on its settings type (defineKind), so a destination of a kind only
// ever reaches that kind's halves.
export const registeredKinds = kinds as unknown as readonly RegisteredKind[];

/** The kind with this stored name, or undefined. */
export function kindNamed(name: string): RegisteredKind | undefined {
  return registeredKinds.find((kind) => kind.name === name);
}

/** The kind of a create request's `kind` (unspecified: the first kind, webhooks); undefined when no kind has that value. */
export function kindOfProto(value: KindProto): RegisteredKind | undefined {
  if (value === KindProto.UNSPECIFIED) return registeredKinds[0];
  return registeredKinds.find((kind) => kind.proto === value);
}

/** The kind a request's `kind` asks for, as kindOfProto; a value no kind has is refused naming `field`. */
export function requireKindOfProto(field: string, value: KindProto): RegisteredKind {
  const kind = kindOfProto(value);
  if (!kind) throw new InvalidInputError(field, `unknown kind ${value}; use ${kindProtoNames()}`);
  return kind;
}

/** The kind of a destination; a stored name no kind has is a bug (rows are written by the kinds). */
export function kindOf(destination: { kind: string }): RegisteredKind {
  const kind = kindNamed(destination.kind);
  if (!kind) throw new Error(`no destination kind ${JSON.stringify(destination.kind)} is registered`);
  return kind;
}

/** A stored destination as the delivery loop holds it: the kind's settings read from its columns. */
export function destinationOfRow(row: DestinationConfigRow): AnyDestination {
  const kind = kindOf(row);
  return {
    id: row.id,
    name: row.name,
    enabled: row.enabled,
    ordering: row.ordering,
    revision: row.revision,
    drop_fields: row.drop_fields,
    transform: row.transform,
    add_profile_id: row.add_profile_id,
    kind: kind.name,
    [kind.name]: kind.settings.fromRow(row),
  } as AnyDestination;
}

/**
 * The matcher of a stored destination's kind (its `routing`), compiled from
 * its routing column; undefined when its kind routes no call itself. What
 * ingest and backfills route by, beside the filter and consent.
 */
export function matcherOfRow(row: { kind: string } & Partial<KindColumns>): CallMatcher | undefined {
  const kind = kindNamed(row.kind);
  const routing = kind?.routing;
  if (!kind || !routing) return undefined;
  return routing.matcher(kind.settings.fromRow({ ...emptyKindColumns, [routing.column]: row[routing.column] ?? null }));
}

/** How the attempts of a destination's kind decide its deliveries. */
export function completionOf(destination: { kind: string }): CompletionRule {
  return kindOf(destination).completion ?? "any-request";
}

/** The kind's settings of a destination. */
export function settingsOf(destination: AnyDestination): unknown {
  return (destination as AnyDestination & Record<string, unknown>)[destination.kind];
}

/** Whether the destination takes every call as stored, its routing rules and shaping not applied (a lake's archive). */
export function takesCallsAsStored(destination: AnyDestination): boolean {
  return kindOf(destination).asStored?.(settingsOf(destination)) ?? false;
}

/** The proto values of the kinds, as "DESTINATION_KIND_WEBHOOK or ..." in messages. */
export function kindProtoNames(): string {
  return registeredKinds.map((kind) => `DESTINATION_KIND_${KindProto[kind.proto]}`).join(" or ");
}
