import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ListAuditEventsRequestSchema } from "../../../gen/waypost/v1/access_pb.js";
import { filterFromQueryOf, filterToQueryOf, timeOf } from "./query-filter.js";

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
  return filterFromQueryOf(keys, query);
}

export function auditFilterToQuery(filter: AuditFilter): string {
  return filterToQueryOf(keys, filter);
}

/** The filter as ListAuditEvents fields. */
export function auditFilterToRequest(filter: AuditFilter): MessageInitShape<typeof ListAuditEventsRequestSchema> {
  return {
    actorId: filter.actor.trim(),
    targetId: filter.target.trim(),
    action: filter.action.trim(),
    startTime: timeOf(filter.since),
    endTime: timeOf(filter.until),
  };
}
