import { invalidArgument, requireUuid } from "./errors.js";

/** A page size within bounds: 0 means the default. */
export function pageSize(requested: number, fallback = 50, max = 500): number {
  if (requested < 0) throw invalidArgument("pageSize", "must not be negative");
  return requested === 0 ? fallback : Math.min(requested, max);
}

/** A page of a listing, and the token of the page after it ("" on the last). */
export interface ListPage<Row> {
  rows: Row[];
  nextPageToken: string;
}

/**
 * One page of a keyset listing. It reads one row more than the page holds,
 * so that a next page is offered only when there is one (a full last page
 * has no token to an empty one).
 *
 * @param read runs the query with the limit it is given
 * @param tokenOf the next page's token, from the page's last row
 * @param fits how many of the rows read may go in the page, when more than
 * the page size can be too many (a byte budget); the page is cut there and
 * the next page starts after it
 */
export async function listPage<Row>(
  size: number,
  read: (limit: number) => Promise<Row[]>,
  tokenOf: (last: Row) => string,
  fits?: (rows: readonly Row[]) => number,
): Promise<ListPage<Row>> {
  const found = await read(size + 1);
  const rows = found.slice(0, fits ? Math.min(size, fits(found)) : size);
  const last = rows[rows.length - 1];
  return { rows, nextPageToken: found.length > rows.length && last ? tokenOf(last) : "" };
}

/** A row's token for encodeTimeCursor's keyset. */
export const timeCursorOf = (row: { cursor_at: string; id: string }) => encodeTimeCursor(row.cursor_at, row.id);

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
