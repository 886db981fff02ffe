/**
 * The errors domain code throws (audiences, deletion, ingest helpers). They
 * say what went wrong in the caller's terms and know nothing of transports:
 * the RPC edge maps them to Connect codes once (src/api/domain-errors.ts),
 * the compatible HTTP API to its own error shape (src/compat/errors.ts).
 */

/** Input the caller got wrong: the field (`audienceId`, `members[3].userId`) and the problem. */
export class InvalidInputError extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
    this.name = "InvalidInputError";
  }
}

/** A resource the caller named does not exist. */
export class NotFoundError extends Error {
  constructor(
    readonly what: string,
    readonly id: string,
  ) {
    super(`${what} ${JSON.stringify(id)} not found`);
    this.name = "NotFoundError";
  }
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What is wrong with a resource id before it reaches a uuid column (which would throw), or undefined. */
export function uuidProblem(value: string): string | undefined {
  if (value === "") return "is required";
  if (!uuidPattern.test(value)) return `${JSON.stringify(value.slice(0, 64))} is not a valid id`;
  return undefined;
}

/** A resource id, lower-cased; InvalidInputError naming the field when it is not one. */
export function requireId(field: string, value: string): string {
  const problem = uuidProblem(value);
  if (problem) throw new InvalidInputError(field, problem);
  return value.toLowerCase();
}

// With the u flag a surrogate pair is one code point, so this matches unpaired halves only.
const loneSurrogate = /\p{Cs}/u;

/** Why Postgres text cannot hold this (a NUL, or once encoded as UTF-8 a lone UTF-16 surrogate), or undefined. */
export function storableTextProblem(value: string): string | undefined {
  if (value.includes("\0")) return "must not contain NUL characters";
  if (loneSurrogate.test(value)) return "must not contain unpaired UTF-16 surrogates";
  return undefined;
}
