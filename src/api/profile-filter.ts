import { liveProfileId } from "../db/queries/identity/profiles.js";
import type { Queryable } from "../db/pool.js";
import { notFound, requireUuid } from "./errors.js";

/**
 * A request's profileId filter as the live profile it stands for (a merged
 * profile's id gives its survivor); empty: no filter; unknown: not_found
 * (also where identity resolution is off, so no profile exists).
 */
export async function profileFilter(db: Queryable, raw: string): Promise<string | undefined> {
  if (raw === "") return undefined;
  const live = await liveProfileId(db, { profileId: requireUuid("profileId", raw) });
  if (!live) throw notFound("profile", raw);
  return live;
}
