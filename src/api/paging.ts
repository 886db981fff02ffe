import { invalidArgument, requireUuid } from "./errors.js";

/** A page size within bounds: 0 means the default. */
export function pageSize(requested: number, fallback = 50, max = 500): number {
  if (requested < 0) throw invalidArgument("pageSize", "must not be negative");
  return requested === 0 ? fallback : Math.min(requested, max);
}

/** Page tokens are opaque to clients: base64url of a cursor string. */
export function encodePageToken(cursor: string): string {
  return Buffer.from(cursor, "utf8").toString("base64url");
}

export function decodePageToken(token: string): string | undefined {
  if (token === "") return undefined;
  const cursor = Buffer.from(token, "base64url").toString("utf8");
  if (cursor === "" || encodePageToken(cursor) !== token) throw invalidArgument("pageToken", "is not a token this server issued");
  return cursor;
}

/**
 * Keyset cursor "<created_at as Postgres prints it>|<uuid>": the text form
 * keeps microseconds, which a JS Date would lose (and rows would repeat).
 */
export function encodeTimeCursor(createdAtText: string, id: string): string {
  return encodePageToken(`${createdAtText}|${id}`);
}

export function decodeTimeCursor(token: string): { createdAt: string; id: string } | undefined {
  const cursor = decodePageToken(token);
  if (cursor === undefined) return undefined;
  const [createdAt, id] = cursor.split("|");
  if (!createdAt || !id || !/^\d{4}-\d{2}-\d{2} [\d:.]+[+-]\d{2}(:\d{2})?$/.test(createdAt)) {
    throw invalidArgument("pageToken", "is not a token this server issued");
  }
  return { createdAt, id: requireUuid("pageToken", id) };
}
