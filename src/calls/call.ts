import type { JsonObject } from "@bufbuild/protobuf";

export const callTypes = ["identify", "track", "page", "screen", "group", "alias"] as const;
export type CallType = (typeof callTypes)[number];

/** The fields of a Call that only some types carry. */
export type TypeField = "event" | "name" | "category" | "groupId" | "previousId" | "properties" | "traits";

/**
 * Which of those each type carries (every type but alias also has an
 * anonymousId), in the order the webhook body writes them
 * (docs/webhooks.md#the-body). A Record over CallType: a type added to
 * callTypes does not compile until it is given its fields here.
 */
export const typeFields: Readonly<Record<CallType, readonly TypeField[]>> = {
  identify: ["traits"],
  track: ["event", "properties"],
  page: ["name", "category", "properties"],
  screen: ["name", "properties"],
  group: ["groupId", "traits"],
  alias: ["previousId"],
};

export function isCallType(value: unknown): value is CallType {
  return typeof value === "string" && Object.hasOwn(typeFields, value);
}

/**
 * The `default` of every switch over a call's type. Its parameter is
 * `never`, so a switch that misses a type does not compile (the type checker
 * finds the forgotten case, not a test); a value that is no call type at run
 * time throws.
 */
export function unknownCallType(type: never): never {
  throw new Error(`unknown call type ${JSON.stringify(type)}`);
}

/**
 * One analytics call as every entry point (Connect RPC, the compatible HTTP
 * API, audience syncs) hands it to ingestion. Empty strings mean "absent", as
 * in proto3.
 */
export interface Call {
  type: CallType;
  messageId: string;
  userId: string;
  anonymousId: string;
  /** alias only */
  previousId: string;
  /** Set only to import past data; otherwise the receive time is used. */
  timestamp: Date | undefined;
  /**
   * When the client says it sent the call (the tracking API's `sentAt`):
   * stored with the call, not part of its body; a warehouse's `sent_at`.
   */
  sentAt?: Date | undefined;
  context: JsonObject | undefined;
  integrations: JsonObject | undefined;
  /** track */
  event: string;
  /** page, screen */
  name: string;
  /** page */
  category: string;
  /** group */
  groupId: string;
  /** track, page, screen */
  properties: JsonObject | undefined;
  /** identify, group */
  traits: JsonObject | undefined;
  /**
   * context, properties or traits as JSON text, when they were read straight
   * from the protobuf wire (src/api/struct-wire.ts); the object field is
   * then undefined. That text is stored as it is: it was checked on the way
   * (nesting, unstorable text) and holds no problem validation would report.
   */
  structJson?: StructJson | undefined;
}

export type StructJson = Partial<Record<"context" | "properties" | "traits", string>>;

/** A Call with every optional field absent. */
export function emptyCall(type: CallType): Call {
  return {
    type,
    messageId: "",
    userId: "",
    anonymousId: "",
    previousId: "",
    timestamp: undefined,
    context: undefined,
    integrations: undefined,
    event: "",
    name: "",
    category: "",
    groupId: "",
    properties: undefined,
    traits: undefined,
  };
}
