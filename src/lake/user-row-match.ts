import { archiveTable } from "./archive-row.js";
import type { LakeFileRow } from "./file-reader.js";

export interface UserRowsOptions {
  userId: string;
  /**
   * The sources whose calls go: the archive's rows say their source and are
   * matched by it; the layout's tables have no source column, so there every
   * row of the user goes (the lake takes from at least one of these sources).
   */
  sourceIds: readonly string[];
}

/**
 * Which rows of a lake table hold a call of the user, as the deletion of
 * stored calls picks them (src/db/queries/deletion-user-data.ts): every call
 * whose userId is the user, and alias calls whose previousId is the user
 * (an alias ties the old identity to the new one); delete notifications
 * (the archive keeps them) stay. Anonymous ids are not matched, as they are
 * not in Postgres.
 */
export function userRowMatcher(table: string, options: UserRowsOptions): (row: LakeFileRow) => boolean {
  const { userId } = options;
  if (table === archiveTable) {
    const sources = new Set(options.sourceIds);
    // The stored body writes an alias's ids with spaces; the exact text finds candidates, JSON confirms.
    const previous = `"Previous ID":${JSON.stringify(userId)}`;
    return (row) => {
      if (typeof row.source_id === "string" && !sources.has(row.source_id)) return false;
      // Delete notifications stay, as they stay in Postgres: they record that this (and an earlier) deletion happened.
      if (row.type === "delete") return false;
      if (row.user_id === userId) return true;
      return row.type === "alias" && typeof row.call === "string" && row.call.includes(previous) && previousIdOf(row.call) === userId;
    };
  }
  if (table === "aliases") return (row) => row.user_id === userId || row.previous_id === userId;
  return (row) => row.user_id === userId;
}

function previousIdOf(call: string): unknown {
  try {
    return (JSON.parse(call) as Record<string, unknown>)["Previous ID"];
  } catch {
    return undefined;
  }
}
