import type { Queryable } from "../../pool.js";

// What a source limit needs to know: which sources a destination reads and
// which source an audience belongs to. Unknown ids give no sources, so a
// limited principal is refused them (and learns nothing of what exists).

export async function sourcesOfDestination(db: Queryable, destinationId: string): Promise<string[]> {
  if (!isUuid(destinationId)) return [];
  const { rows } = await db.query<{ source_id: string }>("SELECT source_id FROM destination_sources WHERE destination_id = $1", [
    destinationId,
  ]);
  return rows.map((row) => row.source_id);
}

export async function sourceOfAudience(db: Queryable, audienceId: string): Promise<string[]> {
  if (!isUuid(audienceId)) return [];
  const { rows } = await db.query<{ source_id: string }>("SELECT source_id FROM audiences WHERE id = $1", [audienceId]);
  return rows.map((row) => row.source_id);
}

const isUuid = (text: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(text);
