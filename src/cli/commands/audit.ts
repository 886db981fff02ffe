import { create, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Command } from "commander";
import { type AuditEvent, AuditService, ListAuditEventsResponseSchema } from "../../../gen/waypost/v1/access_pb.js";
import type { Wire } from "../context.js";
import { parseCount, parseTime, table, time } from "../format.js";
import { listPages } from "./list-pages.js";

/** The longest a value is shown in a summary, and the summary itself. */
const maxValue = 60;
const maxSummary = 200;

function valueText(value: JsonValue | undefined): string {
  if (value === undefined) return "(none)";
  const text = JSON.stringify(value);
  return text.length > maxValue ? `${text.slice(0, maxValue - 1)}…` : text;
}

const isChange = (value: JsonValue): value is { from?: JsonValue; to?: JsonValue } =>
  typeof value === "object" &&
  value !== null &&
  !Array.isArray(value) &&
  Object.keys(value).length > 0 &&
  Object.keys(value).every((key) => key === "from" || key === "to");

/**
 * An audit event's diff in one line: `name: "a" → "b"; sharedSecret: changed`
 * (the server keeps only "changed" of a secret). A change recorded as what
 * was asked (a rotation, a retry) reads `request: {...}`. Long: cut, with
 * how many more fields changed.
 */
export function diffSummary(diff: JsonObject | undefined): string {
  if (!diff) return "-";
  const parts = Object.entries(diff).map(([path, change]) => {
    if (change === "changed") return `${path}: changed`;
    if (isChange(change)) return `${path}: ${valueText(change.from)} → ${valueText(change.to)}`;
    return `${path}: ${valueText(change)}`;
  });
  if (parts.length === 0) return "-";
  let summary = "";
  for (const [i, part] of parts.entries()) {
    const next = summary ? `${summary}; ${part}` : part;
    if (next.length > maxSummary && summary) return `${summary}; … (${parts.length - i} more)`;
    summary = next;
  }
  return summary;
}

function actorText(event: AuditEvent): string {
  return event.actorName || event.actorId || event.actorKind || "-";
}

function targetText(event: AuditEvent): string {
  if (!event.targetKind && !event.targetId) return "-";
  return `${event.targetKind || "?"}:${event.targetId || "-"}`;
}

interface Flags {
  actor?: string;
  target?: string;
  action?: string;
  since?: string;
  until?: string;
  limit: string;
}

/** `audit`: the audit log, newest first (AuditService.ListAuditEvents). */
export function registerAudit(program: Command, wire: Wire): void {
  program
    .command("audit")
    .description("the audit log, newest first: who changed what (diffs without secrets), sign-ins (needs audit:read)")
    .option("--actor <id>", "by this actor: a user's or token's id, or admin-token")
    .option("--target <id>", "about this thing: a source's, destination's, token's or user's id")
    .option("--action <action>", 'this action (token.create), or every one under a prefix ending in "." (destination.)')
    .option("--since <time>", "at or after: ISO 8601, or back from now: 30s, 15m, 2h, 7d")
    .option("--until <time>", "before: ISO 8601, or back from now")
    .option("--limit <n>", "at most this many", "50")
    .action(
      wire(async (ctx, flags: Flags) => {
        const limit = parseCount(flags.limit, "--limit");
        const request = {
          actorId: flags.actor ?? "",
          targetId: flags.target ?? "",
          action: flags.action ?? "",
          startTime: flags.since === undefined ? undefined : timestampFromDate(parseTime(flags.since, "--since")),
          endTime: flags.until === undefined ? undefined : timestampFromDate(parseTime(flags.until, "--until")),
        };
        const client = ctx.admin(AuditService);
        const listed = await listPages(
          (pageToken, pageSize) => client.listAuditEvents({ ...request, pageSize, pageToken }, { signal: ctx.signal }),
          (page) => page.events,
          limit,
        );
        const all = create(ListAuditEventsResponseSchema, { events: listed.items, nextPageToken: listed.nextPageToken });
        ctx.print(ListAuditEventsResponseSchema, all, () =>
          table(
            ["TIME", "ACTOR", "ACTION", "TARGET", "OUTCOME", "CHANGES"],
            all.events.map((e) => [time(e.time), actorText(e), e.action, targetText(e), e.outcome || "-", diffSummary(e.diff)]),
          ),
        );
      }),
    );
}
