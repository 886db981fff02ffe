import { hasCallsPastSql, type LogWindow } from "../../call-log/log-read.js";
import type { Queryable } from "../../pool.js";

// The resolver's cursor per source: a LogWindow, as a destination's on the
// call log. A new source's cursor starts before its first call.

/** Gives every source a cursor (new sources since the last call), then the sources with calls to resolve. */
export async function sourcesToResolve(db: Queryable): Promise<string[]> {
  await db.query(`INSERT INTO identity_cursors (source_id, seen) SELECT s.id, '1:1:' FROM sources s
                   WHERE NOT EXISTS (SELECT 1 FROM identity_cursors c WHERE c.source_id = s.id) ON CONFLICT DO NOTHING`);
  const { rows } = await db.query<{ source_id: string }>(`SELECT c.source_id FROM identity_cursors c WHERE ${hasCallsPastSql("c")}`);
  return rows.map((row) => row.source_id);
}

/** A source's cursor, locked for the page's transaction; undefined when the source is gone. */
export async function lockIdentityCursor(db: Queryable, sourceId: string): Promise<LogWindow | undefined> {
  const { rows } = await db.query<{ seen: string; up_to: string | null; after_xid: string; after_id: string }>(
    "SELECT seen::text, up_to::text, after_xid::text, after_id::text FROM identity_cursors WHERE source_id = $1 FOR UPDATE",
    [sourceId],
  );
  const row = rows[0];
  return row ? { seen: row.seen, upTo: row.up_to, after: { xid: row.after_xid, id: row.after_id } } : undefined;
}

export async function saveIdentityCursor(db: Queryable, sourceId: string, window: LogWindow): Promise<void> {
  await db.query(
    "UPDATE identity_cursors SET seen = $2::pg_snapshot, up_to = $3::pg_snapshot, after_xid = $4::xid8, after_id = $5 WHERE source_id = $1",
    [sourceId, window.seen, window.upTo, window.after.xid, window.after.id],
  );
}

/** The lock every resolver page takes first (an arbitrary constant, "WPID" in ASCII): pages of any process, one at a time. */
export async function lockIdentityGraph(db: Queryable): Promise<void> {
  await db.query("SELECT pg_advisory_xact_lock($1)", [0x57504944]);
}
