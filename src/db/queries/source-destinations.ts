import type { Queryable } from "./store-messages.js";

export interface RoutableDestination {
  id: string;
  name: string;
}

/** The enabled destinations connected to a source. */
export async function listEnabledDestinations(db: Queryable, sourceId: string): Promise<RoutableDestination[]> {
  const result = await db.query<RoutableDestination>(
    `SELECT d.id, d.name FROM destination_sources ds
       JOIN destinations d ON d.id = ds.destination_id
      WHERE ds.source_id = $1 AND d.enabled`,
    [sourceId],
  );
  return result.rows;
}
