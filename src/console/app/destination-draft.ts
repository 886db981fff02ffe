import type { MessageInitShape } from "@bufbuild/protobuf";
import { DestinationKind, Ordering, type Destination, type DestinationSchema } from "../../../gen/waypost/v1/destination_pb.js";

export interface HeaderDraft {
  name: string;
  value: string;
}

export interface WebhookDraft {
  url: string;
  headers: HeaderDraft[];
}

/** The destination form's state, as people edit it. */
export interface DestinationDraft {
  /** Chosen on create; fixed afterwards. */
  kind: "webhook" | "postgres";
  /** Postgres only: the warehouse URL (masked as the server shows it, on edit) and schema. */
  postgresUrl: string;
  schema: string;
  name: string;
  enabled: boolean;
  sourceIds: string[];
  webhooks: WebhookDraft[];
  /** keep the stored secret (edit only), set a new one, or clear it. */
  secretMode: "keep" | "set" | "clear";
  secret: string;
  /** Requests per second as typed; "" or "0" is no limit. */
  rateLimit: string;
  ordering: "none" | "per-user";
  /** Create only: ask the server for a Standard Webhooks signing secret. */
  generateSigningSecret: boolean;
  /** Routing rules as typed: the filter's JSON ("" is none), one dropped path a line, the transform's source. */
  filter: string;
  dropFields: string;
  transform: string;
}

export function draftOf(destination: Destination | undefined): DestinationDraft {
  if (!destination) {
    return {
      kind: "webhook",
      postgresUrl: "",
      schema: "",
      name: "",
      enabled: true,
      sourceIds: [],
      webhooks: [{ url: "", headers: [] }],
      secretMode: "set",
      secret: "",
      rateLimit: "",
      ordering: "none",
      generateSigningSecret: false,
      filter: "",
      dropFields: "",
      transform: "",
    };
  }
  return {
    kind: destination.kind === DestinationKind.POSTGRES ? "postgres" : "webhook",
    postgresUrl: destination.postgres?.url ?? "",
    schema: destination.postgres?.schema ?? "",
    name: destination.name,
    enabled: destination.enabled !== false,
    sourceIds: [...destination.sourceIds],
    webhooks: destination.webhooks.map((w) => ({
      url: w.url,
      headers: Object.entries(w.headers).map(([name, value]) => ({ name, value })),
    })),
    secretMode: "keep",
    secret: "",
    rateLimit: destination.maxRequestsPerSecond ? String(destination.maxRequestsPerSecond) : "",
    ordering: destination.ordering === Ordering.PER_USER ? "per-user" : "none",
    generateSigningSecret: false,
    filter: destination.filter && Object.keys(destination.filter).length > 0 ? JSON.stringify(destination.filter, null, 2) : "",
    dropFields: destination.dropFields.join("\n"),
    transform: destination.transform,
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

/** The routing rules of a draft as the API takes them; the filter must have passed parseFilter. */
export function rulesOf(draft: DestinationDraft): { filter: JsonObject; dropFields: string[]; transform: string } {
  const parsed = parseFilter(draft.filter);
  return {
    filter: parsed.problem === undefined ? parsed.filter : {},
    dropFields: draft.dropFields
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line !== ""),
    transform: draft.transform.trim() === "" ? "" : draft.transform,
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
  if (draft.kind === "postgres") {
    return {
      destination: {
        name: draft.name,
        enabled: draft.enabled,
        sourceIds: draft.sourceIds,
        kind: DestinationKind.POSTGRES,
        postgres: { url: draft.postgresUrl.trim(), schema: draft.schema.trim() },
        maxRequestsPerSecond: typeof rate === "number" ? rate : 0,
        ordering: draft.ordering === "per-user" ? Ordering.PER_USER : Ordering.NONE,
      },
      paths: ["name", "enabled", "source_ids", "postgres", "max_requests_per_second", "ordering"],
    };
  }
  const destination: MessageInitShape<typeof DestinationSchema> = {
    name: draft.name,
    enabled: draft.enabled,
    sourceIds: draft.sourceIds,
    webhooks: draft.webhooks.map((w) => ({
      url: w.url.trim(),
      headers: Object.fromEntries(w.headers.filter((h) => h.name.trim() !== "").map((h) => [h.name.trim(), h.value])),
    })),
    maxRequestsPerSecond: typeof rate === "number" ? rate : 0,
    ordering: draft.ordering === "per-user" ? Ordering.PER_USER : Ordering.NONE,
    ...rulesOf(draft),
  };
  const paths = ["name", "enabled", "source_ids", "webhooks", "max_requests_per_second", "ordering", "filter", "drop_fields", "transform"];
  if (draft.secretMode === "set" && draft.secret !== "") {
    destination.sharedSecret = draft.secret;
    paths.push("shared_secret");
  } else if (draft.secretMode === "clear") {
    destination.sharedSecret = "";
    paths.push("shared_secret");
  }
  return { destination, paths };
}
