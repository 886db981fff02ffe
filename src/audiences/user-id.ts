import { InvalidInputError } from "../errors.js";
import { limits } from "../ingest/limits.js";

/** The longest user id an audience, computed trait or deletion request accepts: the userId limit of every call. */
export const maxUserIdLength = limits.maxIdentifierLength;

/**
 * Why a user id cannot be stored, or undefined when it can. Postgres text
 * cannot hold NUL, and a lone UTF-16 surrogate would be replaced on its way
 * to the database, so the stored id (and the userId of the identify call)
 * would silently differ from the one sent.
 */
export function userIdProblem(userId: string): string | undefined {
  if (userId === "") return "must not be empty";
  if (userId.length > maxUserIdLength) return `is ${userId.length} characters, over the limit of ${maxUserIdLength}`;
  if (userId.includes("\0")) return "must not contain NUL characters";
  if (hasLoneSurrogate(userId)) return "is not well-formed Unicode (lone surrogate)";
  return undefined;
}

/** Throws invalid_argument naming the field (e.g. `userIds[3]`) for an unusable user id. */
export function requireUserId(field: string, userId: string, where = ""): string {
  const problem = userIdProblem(userId);
  if (problem) throw new InvalidInputError(field, problem + where);
  return userId;
}

/** With the u flag a valid pair is one code point, so \p{Cs} matches only lone halves. */
export function hasLoneSurrogate(text: string): boolean {
  return /\p{Cs}/u.test(text);
}
