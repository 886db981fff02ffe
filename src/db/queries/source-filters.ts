import type { Queryable } from "../pool.js";

export interface SourceFilterRow {
  id: string;
  revision: number;
  filter: Record<string, unknown>;
}

/**
 * The filters of a source's enabled destinations that have one, with the
 * revision each was read at: what ingest routes the source's calls by. The
 * store statement checks the same set (filtersStampSql), so a change made
 * since is noticed.
 */
export async function selectSourceFilters(db: Queryable, sourceId: string): Promise<SourceFilterRow[]> {
  const result = await db.query<SourceFilterRow>({
    name: "waypost_select_source_filters",
    text: `SELECT d.id, d.revision, d.filter FROM destination_sources ds JOIN destinations d ON d.id = ds.destination_id
            WHERE ds.source_id = $1 AND d.enabled AND d.filter IS NOT NULL ORDER BY d.id`,
    values: [sourceId],
  });
  return result.rows;
}

/**
 * The stamp of the filters in force for the source `sourceId` names, as SQL:
 * a JSON object of destination id to revision, over the same rows as
 * selectSourceFilters. Equal to the stamp the caller routed with, or the
 * caller's filters are stale.
 */
export function filtersStampSql(sourceId: string): string {
  return `(SELECT coalesce(jsonb_object_agg(d.id::text, d.revision), '{}'::jsonb)
             FROM destination_sources ds JOIN destinations d ON d.id = ds.destination_id
            WHERE ds.source_id = ${sourceId} AND d.enabled AND d.filter IS NOT NULL)`;
}

/** The stamp of rows read by selectSourceFilters, as the store statement compares it. */
export function filtersStamp(rows: readonly SourceFilterRow[]): string {
  return JSON.stringify(Object.fromEntries(rows.map((row) => [row.id, row.revision])));
}
