import type { Queryable } from "../pool.js";
import { type KindColumns, kindRoutesSql, type RoutingColumn, routingColumnsSql } from "./destinations.js";

/** A connected destination's routing rules, as stored (src/routing/route-rules.ts compiles them). */
export interface SourceFilterRow extends Partial<Pick<KindColumns, RoutingColumn>> {
  id: string;
  revision: number;
  filter: Record<string, unknown> | null;
  consent_categories: string[];
  require_consent: boolean;
  /** Its kind, whose routing reads the routing column set (the others are null). */
  kind: string;
}

/**
 * Which of a source's enabled destinations routing must look at: those that
 * can hold a call back. A filter, consent categories or required consent do;
 * so does every destination of a kind that routes calls itself (a call an
 * integration's subscriptions do not match gets no delivery). Others get
 * every call. A destination on the call log routes its calls as its loader
 * reads them (delivery/call-log/), not at ingest.
 */
const holdsBack = `d.enabled AND d.delivery_layout = 'per_call' AND (d.filter IS NOT NULL OR d.consent_categories <> '{}' OR d.require_consent OR ${kindRoutesSql("d")})`;

/**
 * The rules of a source's destinations that can hold a call back, with the
 * revision each was read at: what ingest routes the source's calls by. The
 * store statement checks the same set (filtersStampSql), so a change made
 * since is noticed. Of the kinds' columns only the routing columns are read.
 */
export async function selectSourceFilters(db: Queryable, sourceId: string): Promise<SourceFilterRow[]> {
  const result = await db.query<SourceFilterRow>({
    name: "waypost_select_source_routes",
    text: `SELECT d.id, d.revision, d.filter, d.consent_categories, d.require_consent, d.kind${routingColumnsSql("d")}
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
