import type { FeedPosition } from "../db/queries/delivery-search.js";
import { parseLogDeliveryId } from "../db/queries/log-deliveries.js";
import { invalidArgument } from "./errors.js";
import { decodePageToken, encodePageToken } from "./paging.js";

// Page tokens are opaque to clients; inside, "c|<created_at>|<id>" pages the
// creation-time order and "f|<seen>|<upTo>|<xid>|<id>" is a finish-feed
// position (snapshots as Postgres prints them). An id is a per-call
// delivery's or one derived from the call log ("<n>@<uuid>").

const timestamp = /^\d{4}-\d{2}-\d{2} [\d:.]+[+-]\d{2}(:\d{2})?$/;
const perCallId = /^[1-9]\d{0,17}$/;
const deliveryIdPattern = { test: (id: string) => perCallId.test(id) || parseLogDeliveryId(id) !== undefined };
const xidPattern = /^\d{1,20}$/;
/** A snapshot's in-progress list is bounded by the server's connections; this is ample. */
const maxTokenLength = 200_000;

function invalid(): never {
  throw invalidArgument("pageToken", "is not a token this server issued for this order");
}

export function encodeCreatedCursor(createdAt: string, id: string): string {
  return encodePageToken(`c|${createdAt}|${id}`);
}

export function decodeCreatedCursor(token: string): { createdAt: string; id: string } | undefined {
  if (token.length > maxTokenLength) invalid();
  const cursor = decodePageToken(token);
  if (cursor === undefined) return undefined;
  const [kind, createdAt, id, ...rest] = cursor.split("|");
  if (kind !== "c" || rest.length > 0 || !createdAt || !timestamp.test(createdAt) || !id || !deliveryIdPattern.test(id)) invalid();
  return { createdAt, id };
}

export function encodeFeedPosition(position: FeedPosition): string {
  const after = position.after ? [position.after.xid, position.after.id] : ["", ""];
  return encodePageToken(["f", position.seen, position.upTo ?? "", ...after].join("|"));
}

export function decodeFeedPosition(token: string): FeedPosition | undefined {
  if (token.length > maxTokenLength) invalid();
  const cursor = decodePageToken(token);
  if (cursor === undefined) return undefined;
  const [kind, seen, upTo, xid, id, ...rest] = cursor.split("|");
  if (kind !== "f" || rest.length > 0 || seen === undefined || !isSnapshot(seen)) invalid();
  if (upTo === undefined || (upTo !== "" && !isSnapshot(upTo))) invalid();
  if (xid === undefined || id === undefined || (xid === "") !== (id === "")) invalid();
  if (xid !== "" && (!xidPattern.test(xid) || !deliveryIdPattern.test(id))) invalid();
  return {
    seen,
    upTo: upTo === "" ? undefined : upTo,
    after: xid === "" ? undefined : { xid, id },
  };
}

/** "xmin:xmax:xip,..." with xmin <= every xip < xmax, as Postgres would accept it. */
function isSnapshot(text: string): boolean {
  const match = /^(\d{1,20}):(\d{1,20}):((?:\d{1,20})(?:,\d{1,20})*)?$/.exec(text);
  if (!match) return false;
  const xmin = BigInt(match[1]!);
  const xmax = BigInt(match[2]!);
  if (xmin < 1n || xmin > xmax || xmax >= 2n ** 64n) return false;
  let previous = xmin - 1n;
  for (const part of match[3] ? match[3].split(",") : []) {
    const xip = BigInt(part);
    if (xip < xmin || xip >= xmax || xip <= previous) return false;
    previous = xip;
  }
  return true;
}
