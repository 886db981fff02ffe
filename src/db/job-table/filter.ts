import type { DeliveryStatus } from "./delivery-completion.js";

/**
 * What a delivery search (or a bulk replay) matches. Absent fields match
 * everything. Shared by the searches (db/queries) and the bulk replay.
 */
export interface DeliveryFilter {
  destinationId?: string | undefined;
  statuses?: readonly DeliveryStatus[] | undefined;
  messageId?: string | undefined;
  userId?: string | undefined;
  /** The calls resolved to this live profile or to one merged into it (identity resolution). */
  profileId?: string | undefined;
  /** Created at or after. */
  since?: Date | undefined;
  /** Created before. */
  until?: Date | undefined;
}

/** A statement and its parameters (exported builders let tests EXPLAIN exactly what runs). */
export interface Query {
  text: string;
  values: unknown[];
}

/** SQL parameters collected while a query is built: `add` returns the placeholder. */
export class Params {
  readonly values: unknown[] = [];
  add(value: unknown, type?: string): string {
    this.values.push(value);
    return type ? `$${this.values.length}::${type}` : `$${this.values.length}`;
  }
}

/**
 * The filter as predicates on deliveries `d`. Only the fields present make a
 * predicate, so each query is planned for the indexes it can use.
 *
 * messageId and userId are looked up among the messages of every source
 * (one probe per source of the unique (source_id, message_id) index and of
 * messages_user_idx): a messageId is unique only within a source. The
 * matching messages' deliveries then come through deliveries_message_idx.
 */
export function filterPredicates(filter: DeliveryFilter, params: Params, options: { destination?: boolean } = {}): string[] {
  const where: string[] = [];
  if (filter.destinationId !== undefined && options.destination !== false) {
    where.push(`d.destination_id = ${params.add(filter.destinationId, "uuid")}`);
  }
  if (filter.statuses && filter.statuses.length > 0) {
    where.push(`d.status = ANY(${params.add(filter.statuses, "delivery_status[]")})`);
  }
  if (filter.messageId !== undefined) {
    where.push(`d.message_pk IN (SELECT fm.id FROM messages fm
                                  WHERE fm.source_id IN (SELECT id FROM sources)
                                    AND fm.message_id = ${params.add(filter.messageId, "text")})`);
  }
  if (filter.userId !== undefined) {
    where.push(`d.message_pk IN (SELECT fm.id FROM messages fm
                                  WHERE fm.source_id IN (SELECT id FROM sources)
                                    AND fm.user_id = ${params.add(filter.userId, "text")})`);
  }
  if (filter.profileId !== undefined) where.push(`d.message_pk IN (${profileCallsSql(params.add(filter.profileId, "uuid"))})`);
  if (filter.since) where.push(`d.created_at >= ${params.add(filter.since, "timestamptz")}`);
  if (filter.until) where.push(`d.created_at < ${params.add(filter.until, "timestamptz")}`);
  return where;
}

/** The message pks of a profile's calls: its own and those of the profiles merged into it. */
export function profileCallsSql(profile: string): string {
  return `SELECT pc.message_pk FROM profile_calls pc
           WHERE pc.profile_id IN (SELECT fp.id FROM profiles fp WHERE fp.id = ${profile} OR fp.merged_into = ${profile})`;
}

/** Whether the filter narrows by message first (few rows), so no per-destination walk is needed. */
export function byMessage(filter: DeliveryFilter): boolean {
  return filter.messageId !== undefined || filter.userId !== undefined || filter.profileId !== undefined;
}

export function and(predicates: readonly string[]): string {
  return predicates.length === 0 ? "TRUE" : predicates.join("\n    AND ");
}
