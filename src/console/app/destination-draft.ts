import type { MessageInitShape } from "@bufbuild/protobuf";
import { Ordering, type Destination, type DestinationSchema } from "../../../gen/waypost/v1/destination_pb.js";
import { descriptorNamed, descriptorOfProto } from "../../delivery/kinds/descriptors.js";
import type { DestinationDraft } from "./destination-draft-types.js";
import { kindForms } from "./views/kind-forms.js";

/** Every kind's part of the draft, empty (a new destination), so switching the kind on create keeps a full draft. */
function emptyKindParts(): Omit<
  DestinationDraft,
  | "kind"
  | "name"
  | "enabled"
  | "sourceIds"
  | "rateLimit"
  | "ordering"
  | "filter"
  | "dropFields"
  | "transform"
  | "consentCategories"
  | "requireConsent"
> {
  return Object.assign({}, ...Object.values(kindForms).map((form) => form.draft(undefined)));
}

export function draftOf(destination: Destination | undefined): DestinationDraft {
  if (!destination) {
    return {
      ...emptyKindParts(),
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
    };
  }
  const kind = descriptorOfProto(destination.kind).name;
  return {
    ...emptyKindParts(),
    ...kindForms[kind].draft(destination),
    kind,
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
  };
}

type JsonObject = NonNullable<MessageInitShape<typeof DestinationSchema>["filter"]>;

/** The filter as typed: {} when empty (no filter), the object, or what is wrong with the text. */
export function parseFilter(text: string): { filter: JsonObject; problem?: undefined } | { problem: string } {
  if (text.trim() === "") return { filter: {} };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { problem: `is not JSON: ${(error as Error).message}` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { problem: "must be a JSON object" };
  return { filter: value as JsonObject };
}

/** Consent categories as typed: separated by commas or line breaks, each trimmed, empty ones left out. */
export function parseConsentCategories(text: string): string[] {
  return text
    .split(/[,\n]/)
    .map((name) => name.trim())
    .filter((name) => name !== "");
}

/** The routing rules of a draft as the API takes them; the filter must have passed parseFilter. */
export function rulesOf(draft: DestinationDraft): {
  filter: JsonObject;
  dropFields: string[];
  transform: string;
  consentCategories: string[];
  requireConsent: boolean;
} {
  const parsed = parseFilter(draft.filter);
  return {
    filter: parsed.problem === undefined ? parsed.filter : {},
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
  const own = kindForms[draft.kind].request(draft);
  const destination: MessageInitShape<typeof DestinationSchema> = {
    name: draft.name,
    enabled: draft.enabled,
    sourceIds: draft.sourceIds,
    kind: descriptorNamed(draft.kind)?.proto,
    maxRequestsPerSecond: typeof rate === "number" ? rate : 0,
    ordering: draft.ordering === "per-user" ? Ordering.PER_USER : Ordering.NONE,
    ...rulesOf(draft),
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
    ...own.paths,
  ];
  return { destination, paths };
}
