/**
 * The six analytics calls, typed after the Go library v2's message structs
 * (`analytics.Identify`, `analytics.Track`, ...). Field names are the JSON
 * (camelCase) names the Waypost API uses.
 *
 * Free-form objects (`properties`, `traits`, `context`) are JSON-encoded when
 * the call is made: `Date` values become ISO strings, `undefined` values are
 * left out, and later changes to the object do not change the queued call.
 */

/** The kinds of call, as in `BatchRequest.batch[].type.case`. */
export type CallType = "identify" | "track" | "page" | "screen" | "group" | "alias";

/** A free-form JSON object (Go: `map[string]interface{}`). */
export type Properties = Record<string, unknown>;

/**
 * Destination switches: destination name (e.g. `Webhooks`, or `All`) to
 * boolean. Keys are case sensitive; `{ All: false, Webhooks: true }` sends the
 * call to the webhook destinations only.
 */
export type Integrations = Record<string, boolean | Properties>;

/** Fields every call type carries. */
export interface CommonFields {
  /**
   * The deduplication key. Generated (a random UUID) when absent; a repeat
   * with the same id is acknowledged by the server and not delivered again,
   * which is what makes client retries safe.
   */
  messageId?: string;
  /**
   * When the call happened. Set only to import past data; when absent the
   * server's receive time is used. A `Date` or an ISO 8601 string.
   */
  timestamp?: Date | string;
  /** Extra information about the call (not attributes of the user). */
  context?: Properties;
  /** Turns destinations on or off for this call. */
  integrations?: Integrations;
}

/** Fields of the calls that need `userId` or `anonymousId`. */
export interface IdentifiedFields extends CommonFields {
  /** The user's id in your database. This or `anonymousId` is required. */
  userId?: string;
  /** An id for a user who is not known yet. This or `userId` is required. */
  anonymousId?: string;
}

/** Go: `analytics.Identify`. Ties a user to their traits. */
export interface IdentifyCall extends IdentifiedFields {
  traits?: Properties;
}

/** Go: `analytics.Track`. Records an action the user performed. */
export interface TrackCall extends IdentifiedFields {
  /** Required: the event name, e.g. `"Signed Up"`. */
  event: string;
  properties?: Properties;
}

/** Go: `analytics.Page`. Records a page view. */
export interface PageCall extends IdentifiedFields {
  name?: string;
  category?: string;
  /** `url`, `title`, `referrer` and `path` are the recognised keys; others pass through. */
  properties?: Properties;
}

/** A screen view in a mobile app (not in the Go library v2). */
export interface ScreenCall extends IdentifiedFields {
  name?: string;
  properties?: Properties;
}

/** Go: `analytics.Group`. Ties a user to a group (company, account, team). */
export interface GroupCall extends IdentifiedFields {
  /** Required: the group's id. */
  groupId: string;
  traits?: Properties;
}

/** Go: `analytics.Alias`. Merges a previous identity into a user id. */
export interface AliasCall extends CommonFields {
  /** Required: the user's id. */
  userId: string;
  /** Required: the previous id (often an anonymous id). */
  previousId: string;
}

/** Input type of each call type. */
export interface CallInputs {
  identify: IdentifyCall;
  track: TrackCall;
  page: PageCall;
  screen: ScreenCall;
  group: GroupCall;
  alias: AliasCall;
}

/** Any call, as handed to `onSuccess` / `onFailure`. */
export type AnyCall = CallInputs[CallType];

/** What the callbacks receive for each call. */
export interface CallRecord {
  type: CallType;
  /** The call's messageId (the generated one when the call had none). */
  messageId: string;
  /** The object passed to `track()` etc. (not a copy). */
  call: AnyCall;
}
