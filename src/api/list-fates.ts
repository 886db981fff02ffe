import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Fate, ListFatesResponseSchema, type ListFatesRequest, type ListFatesResponse } from "../../gen/waypost/v1/delivery_pb.js";
import type { JobTableReads } from "../db/job-table/index.js";
import type { Queryable } from "../db/pool.js";
import { destinationExists } from "../db/queries/destinations.js";
import type { RecordedFate } from "../db/queries/fate-search.js";
import { timeRange } from "./delivery-proto.js";
import { invalidArgument, notFound, requireUuid } from "./errors.js";
import { profileFilter } from "./profile-filter.js";
import { decodePageToken, encodePageToken, listPage, pageSize } from "./paging.js";

const recordedFates: ReadonlyMap<Fate, RecordedFate> = new Map([
  [Fate.FILTERED, "filtered"],
  [Fate.DISABLED, "disabled"],
  [Fate.INTEGRATIONS_OFF, "integrations_off"],
]);
const fateToProto = new Map([...recordedFates].map(([proto, name]) => [name, proto]));
/** The reasons of FILTERED: the filter, consent, an integration's subscriptions (at routing), a transform (when sent). */
const reasons = ["filter", "consent", "subscriptions", "transform"];

/** ListFates: the calls a destination got no delivery for, as recorded when routed, newest first. */
export async function listFates(
  db: Queryable,
  reads: Pick<JobTableReads, "searchFates">,
  req: ListFatesRequest,
): Promise<ListFatesResponse> {
  if (req.destinationId === "") throw invalidArgument("destinationId", "is required");
  const destinationId = requireUuid("destinationId", req.destinationId);
  const fates = fateFilter(req.fate);
  const reason = reasonFilter(req.reason, req.fate);
  const size = pageSize(req.pageSize);
  const before = decodeFateCursor(req.pageToken);
  const range = timeRange(req.since, req.until);
  if (!(await destinationExists(db, destinationId))) throw notFound("destination", destinationId);
  const profileId = await profileFilter(db, req.profileId);
  const filter = { destinationId, fates: reason ? ["filtered" as const] : fates, reason, ...range, before, profileId };
  const page = await listPage(
    size,
    (limit) => reads.searchFates(db, { ...filter, limit }),
    (last) => encodeFateCursor(last.cursor_at, last.message_pk),
  );
  return create(ListFatesResponseSchema, {
    calls: page.rows.map((row) => ({
      sourceId: row.source_id,
      messageId: row.message_id,
      type: row.type,
      event: row.event ?? "",
      userId: row.user_id ?? "",
      receiveTime: timestampFromDate(row.received_at),
      fate: fateToProto.get(row.fate) ?? Fate.UNSPECIFIED,
      reason: row.reason ?? "",
      recordTime: timestampFromDate(row.recorded_at),
    })),
    nextPageToken: page.nextPageToken,
  });
}

function fateFilter(fate: Fate): RecordedFate[] {
  if (fate === Fate.UNSPECIFIED) return [...recordedFates.values()];
  const name = recordedFates.get(fate);
  if (!name) {
    throw invalidArgument(
      "fate",
      `${Fate[fate] === undefined ? `unknown fate ${fate}` : `FATE_${Fate[fate]}`} is not recorded when a call is routed; use FATE_FILTERED, FATE_DISABLED or FATE_INTEGRATIONS_OFF (or none for all three)`,
    );
  }
  return [name];
}

function reasonFilter(reason: string, fate: Fate): string | undefined {
  if (reason === "") return undefined;
  if (!reasons.includes(reason)) {
    const names = reasons.map((r) => JSON.stringify(r));
    throw invalidArgument(
      "reason",
      `must be ${names.slice(0, -1).join(", ")} or ${names.at(-1)} (or empty for any), not ${JSON.stringify(reason.slice(0, 64))}`,
    );
  }
  if (fate !== Fate.UNSPECIFIED && fate !== Fate.FILTERED) throw invalidArgument("reason", "goes only with FATE_FILTERED");
  return reason;
}

// The page cursor, opaque to clients: "r|<recorded_at as Postgres prints it>|<message pk>".
const timestamp = /^\d{4}-\d{2}-\d{2} [\d:.]+[+-]\d{2}(:\d{2})?$/;
const messagePk = /^[1-9]\d{0,18}$/;

function encodeFateCursor(recordedAt: string, pk: string): string {
  return encodePageToken(`r|${recordedAt}|${pk}`);
}

function decodeFateCursor(token: string): { recordedAt: string; messagePk: string } | undefined {
  if (token.length > 200) throw invalidArgument("pageToken", "is not a token this server issued for ListFates");
  const cursor = decodePageToken(token);
  if (cursor === undefined) return undefined;
  const [kind, recordedAt, pk, ...rest] = cursor.split("|");
  if (kind !== "r" || rest.length > 0 || !recordedAt || !timestamp.test(recordedAt) || !pk || !messagePk.test(pk)) {
    throw invalidArgument("pageToken", "is not a token this server issued for ListFates");
  }
  return { recordedAt, messagePk: pk };
}
