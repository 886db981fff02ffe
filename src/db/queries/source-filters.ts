import type { Queryable } from "../pool.js";

/** A connected destination's routing rules, as stored (src/routing/route-rules.ts compiles them). */
export interface SourceFilterRow {
  id: string;
  revision: number;
  filter: Record<string, unknown> | null;
  consent_categories: string[];
  require_consent: boolean;
  /** An integration destination's settings ({slug, settings, subscriptions}; {} when absent); null for other kinds. */
  integration: unknown;
}

/**
 * Which of a source's enabled destinations routing must look at: those that
 * can hold a call back. A filter, consent categories or required consent do;
 * so does every integration destination (a call that matches none of its
 * subscriptions gets no delivery). Others get every call.
 */
const holdsBack = "d.enabled AND (d.filter IS NOT NULL OR d.consent_categories <> '{}' OR d.require_consent OR d.kind = 'integration')";

/**
 * The rules of a source's destinations that can hold a call back, with the
 * revision each was read at: what ingest routes the source's calls by. The
 * store statement checks the same set (filtersStampSql), so a change made
 * since is noticed. Only an integration's settings are read of its
 * `integration` column (the subscriptions are in it).
 */
export async function selectSourceFilters(db: Queryable, sourceId: string): Promise<SourceFilterRow[]> {
  const result = await db.query<SourceFilterRow>({
    name: "waypost_select_source_routes",
    text: `SELECT d.id, d.revision, d.filter, d.consent_categories, d.require_consent,
                  CASE WHEN d.kind = 'integration' THEN coalesce(d.integration, '{}'::jsonb) END AS integration
             FROM destination_sources ds JOIN destinations d ON d.id = ds.destination_id
            WHERE ds.source_id = $1 AND ${holdsBack} ORDER BY d.id`,
    values: [sourceId],
  });
  return result.rows;
}

/**
 * The stamp of the rules in force for the source `sourceId` names, as SQL:
 * a JSON object of destination id to revision, over the same rows as
 * selectSourceFilters. Equal to the stamp the caller routed with, or the
 * caller's rules are stale.
 */
export function filtersStampSql(sourceId: string): string {
  return `(SELECT coalesce(jsonb_object_agg(d.id::text, d.revision), '{}'::jsonb)
             FROM destination_sources ds JOIN destinations d ON d.id = ds.destination_id
            WHERE ds.source_id = ${sourceId} AND ${holdsBack})`;
}

/** The stamp of rows read by selectSourceFilters, as the store statement compares it. */
export function filtersStamp(rows: readonly SourceFilterRow[]): string {
  return JSON.stringify(Object.fromEntries(rows.map((row) => [row.id, row.revision])));
}
