import { profilesOfIdentifiers } from "../db/queries/identity/profiles.js";
import type { Queryable } from "../db/pool.js";

// A destination with addProfileId sends every call with context.profileId:
// the profile its userId belongs to, else its anonymousId's. Looked up when
// the call is sent, one statement for a page of calls; a call whose ids the
// resolver has not seen yet (it runs a moment behind ingest) goes without.

const stringId = (value: unknown) => (typeof value === "string" && value !== "" ? value : undefined);

/** The calls' bodies (as stored, JSON) with context.profileId added where a profile is known; the others unchanged. */
export async function withProfileIds(db: Queryable, payloads: readonly string[]): Promise<string[]> {
  const bodies = payloads.map((payload) => {
    try {
      const body = JSON.parse(payload) as Record<string, unknown>;
      return body && typeof body === "object" && !Array.isArray(body) ? body : undefined;
    } catch {
      return undefined;
    }
  });
  const idsOf = (body: Record<string, unknown>) => ({
    userId: stringId(body.type === "alias" ? body["User ID"] : body.userId),
    anonymousId: stringId(body.anonymousId),
  });
  const wanted = bodies.flatMap((body) => {
    if (!body) return [];
    const { userId, anonymousId } = idsOf(body);
    return [
      ...(userId ? [{ type: "user_id", value: userId }] : []),
      ...(anonymousId ? [{ type: "anonymous_id", value: anonymousId }] : []),
    ];
  });
  const profiles = await profilesOfIdentifiers(db, wanted);
  return bodies.map((body, i) => {
    if (!body) return payloads[i]!;
    const { userId, anonymousId } = idsOf(body);
    const profileId = (userId && profiles.get(`user_id:${userId}`)) || (anonymousId && profiles.get(`anonymous_id:${anonymousId}`));
    if (!profileId) return payloads[i]!;
    const context =
      body.context && typeof body.context === "object" && !Array.isArray(body.context) ? (body.context as Record<string, unknown>) : {};
    return JSON.stringify({ ...body, context: { ...context, profileId } });
  });
}
