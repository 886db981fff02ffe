import { lockIdentityGraph } from "../db/queries/identity/identity-cursors.js";
import { deleteProfileMessages, forgetProfile, selectProfileToDelete } from "../db/queries/identity/profile-deletion.js";
import type { Queryable } from "../db/pool.js";

export interface ForgottenPerson {
  /** Every userId of the person (the one asked for, and those of its profile): each gets its delete notifications. */
  userIds: string[];
  /** Calls resolved to the profile, deleted. */
  messagesDeleted: number;
}

/**
 * The person behind a deletion request's identifier: the profile holding it
 * (after the resolver's current page, whose lock this takes), its calls in
 * the affected sources, and its rows. Its identifiers, and the one asked
 * for, stay as tombstones in the affected sources: a call of one of them
 * received before now and resolved later is deleted when the resolver
 * reaches it, and never merges the person back.
 */
export async function forgetPerson(
  tx: Queryable,
  input: { identifierType: string; userId: string },
  sourceIds: readonly string[],
  at: Date,
): Promise<ForgottenPerson> {
  await lockIdentityGraph(tx);
  const profile = await selectProfileToDelete(tx, input.identifierType, input.userId);
  const asked = { type: input.identifierType, value: input.userId };
  const identifiers = [asked, ...(profile?.identifiers ?? []).filter((i) => i.type !== asked.type || i.value !== asked.value)];
  const userIds = [...new Set(identifiers.filter((i) => i.type === "user_id").map((i) => i.value))];
  const messagesDeleted = profile ? await deleteProfileMessages(tx, profile.family, sourceIds) : 0;
  await forgetProfile(tx, { family: profile?.family ?? [], identifiers }, sourceIds, at);
  return { userIds, messagesDeleted };
}
