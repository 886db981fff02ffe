import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ListAuditEventsRequestSchema } from "../../../gen/waypost/v1/access_pb.js";

/** The Audit log filter, as it stands in the page's query string (shareable, no secrets). */
export interface AuditFilter {
  actor: string;
  target: string;
  /** An action ("token.create") or a prefix ending in "." ("destination."). */
  action: string;
  /** datetime-local values, in the browser's time zone. */
  since: string;
  until: string;
}

const keys: Array<keyof AuditFilter> = ["actor", "target", "action", "since", "until"];

export const noAuditFilter: AuditFilter = { actor: "", target: "", action: "", since: "", until: "" };

export function auditFilterFromQuery(query: Record<string, string | undefined>): AuditFilter {
  const filter = { ...noAuditFilter };
  for (const key of keys) filter[key] = query[key] ?? "";
  return filter;
}

export function auditFilterToQuery(filter: AuditFilter): string {
  const params = new URLSearchParams();
  for (const key of keys) if (filter[key].trim() !== "") params.set(key, filter[key].trim());
  const text = params.toString();
  return text ? `?${text}` : "";
}

function time(value: string) {
  if (value === "") return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : timestampFromDate(date);
}

/** The filter as ListAuditEvents fields. */
export function auditFilterToRequest(filter: AuditFilter): MessageInitShape<typeof ListAuditEventsRequestSchema> {
  return {
    actorId: filter.actor.trim(),
    targetId: filter.target.trim(),
    action: filter.action.trim(),
    startTime: time(filter.since),
    endTime: time(filter.until),
  };
}
