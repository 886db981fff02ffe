import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import { Ordering, type Destination, type DestinationSchema } from "../../../gen/waypost/v1/destination_pb.js";
import { descriptorNamed, descriptorOfProto, type KindName } from "../../delivery/kinds/descriptors.js";
import { parseJsonObject } from "./json-text.js";
import { kindDraftsOf, type KindDrafts, ownKind } from "./kinds/registry.js";

/**
 * The destination form's state, as people edit it: what every destination
 * has, then each kind's own part (its client file in kinds/ fills it,
 * sends it and shows its fields).
 */
export interface DestinationDraft {
  /** Chosen on create; fixed afterwards. */
  kind: KindName;
  name: string;
  enabled: boolean;
  sourceIds: string[];
  /** Requests per second as typed; "" or "0" is no limit. */
  rateLimit: string;
  ordering: "none" | "per-user";
  /** Routing rules as typed: the filter's JSON ("" is none), one dropped path a line, the transform's source. */
  filter: string;
  dropFields: string;
  transform: string;
  /** Consent: the categories as typed (comma- or line-separated), and whether calls without preferences are held back. */
  consentCategories: string;
  requireConsent: boolean;
  /** Calls carry context.profileId (identity resolution). */
  addProfileId: boolean;
  /** Every kind's part, the chosen kind's among them: switching the kind on create loses nothing typed. */
  kinds: KindDrafts;
}

export function draftOf(destination: Destination | undefined): DestinationDraft {
  const kinds = kindDraftsOf(destination);
  if (!destination) {
    return {
      kind: descriptorOfProto(0).name,
      name: "",
      enabled: true,
      sourceIds: [],
      rateLimit: "",
      ordering: "none",
      filter: "",
      dropFields: "",
      transform: "",
      consentCategories: "",
      requireConsent: false,
      addProfileId: false,
      kinds,
    };
  }
  return {
    kind: descriptorOfProto(destination.kind).name,
    name: destination.name,
    enabled: destination.enabled !== false,
    sourceIds: [...destination.sourceIds],
    rateLimit: destination.maxRequestsPerSecond ? String(destination.maxRequestsPerSecond) : "",
    ordering: destination.ordering === Ordering.PER_USER ? "per-user" : "none",
    filter: destination.filter && Object.keys(destination.filter).length > 0 ? JSON.stringify(destination.filter, null, 2) : "",
    dropFields: destination.dropFields.join("\n"),
    transform: destination.transform,
    consentCategories: destination.consentCategories.join(", "),
    requireConsent: destination.requireConsent,
    addProfileId: destination.addProfileId,
    kinds,
  };
}

/** Consent categories as typed: separated by commas or line breaks, each trimmed, empty ones left out. */
export function parseConsentCategories(text: string): string[] {
  return text
    .split(/[,\n]/)
    .map((name) => name.trim())
    .filter((name) => name !== "");
}

/** The routing rules of a draft as the API takes them; the filter must have passed parseJsonObject. */
export function rulesOf(draft: DestinationDraft): {
  filter: JsonObject;
  dropFields: string[];
  transform: string;
  consentCategories: string[];
  requireConsent: boolean;
} {
  const parsed = parseJsonObject(draft.filter);
  return {
    filter: parsed.problem === undefined ? parsed.object : {},
    dropFields: draft.dropFields
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line !== ""),
    transform: draft.transform.trim() === "" ? "" : draft.transform,
    consentCategories: parseConsentCategories(draft.consentCategories),
    requireConsent: draft.requireConsent,
  };
}

/**
 * The rate limit as the API takes it (a uint32; the server checks the
 * range and names the field when it refuses). Text that is not a whole
 * number cannot even be sent: the form says so itself, in the same place.
 */
export function parseRateLimit(text: string): number | { problem: string } {
  const trimmed = text.trim();
  if (trimmed === "") return 0;
  if (!/^\d+$/.test(trimmed) || Number(trimmed) > 0xffff_ffff) {
    return { problem: "must be a whole number of requests per second (empty or 0: no limit)" };
  }
  return Number(trimmed);
}

/**
 * The resource to send, and (for an update) the mask naming what changes.
 * The rate limit must have passed parseRateLimit.
 */
export function toRequest(draft: DestinationDraft): { destination: MessageInitShape<typeof DestinationSchema>; paths: string[] } {
  const rate = parseRateLimit(draft.rateLimit);
  const { form, part } = ownKind(draft.kind, draft.kinds);
  const own = form.request(part);
  const destination: MessageInitShape<typeof DestinationSchema> = {
    name: draft.name,
    enabled: draft.enabled,
    sourceIds: draft.sourceIds,
    kind: descriptorNamed(draft.kind)?.proto,
    maxRequestsPerSecond: typeof rate === "number" ? rate : 0,
    ordering: draft.ordering === "per-user" ? Ordering.PER_USER : Ordering.NONE,
    ...rulesOf(draft),
    addProfileId: draft.addProfileId,
    ...own.fields,
  };
  const paths = [
    "name",
    "enabled",
    "source_ids",
    "max_requests_per_second",
    "ordering",
    "filter",
    "drop_fields",
    "transform",
    "consent_categories",
    "require_consent",
    "add_profile_id",
    ...own.paths,
  ];
  return { destination, paths };
}
