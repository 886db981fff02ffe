import { storableTextProblem } from "../errors.js";
import { invalidArgument, requireUuid } from "./errors.js";

/** Limits of what every destination has (a kind checks its own settings: src/delivery/kinds/). */
export const destinationLimits = {
  maxNameLength: 200,
  maxSources: 1000,
} as const;

/**
 * A display name (of a source, destination or audience): trimmed, 1 to 200
 * characters, storable as Postgres text (no NUL, no lone surrogate).
 */
export function validateName(field: string, name: string): string {
  const trimmed = name.trim();
  if (trimmed === "") throw invalidArgument(field, "is required");
  if (trimmed.length > destinationLimits.maxNameLength) {
    throw invalidArgument(field, `is longer than ${destinationLimits.maxNameLength} characters`);
  }
  requireStorableText(field, trimmed);
  return trimmed;
}

/** Postgres text holds neither NUL nor, once encoded as UTF-8, a lone UTF-16 surrogate. */
export function requireStorableText(field: string, value: string): void {
  const problem = storableTextProblem(value);
  if (problem) throw invalidArgument(field, problem);
}

export function validateSourceIds(field: string, ids: readonly string[]): string[] {
  if (ids.length > destinationLimits.maxSources) throw invalidArgument(field, `at most ${destinationLimits.maxSources} sources`);
  return [...new Set(ids.map((id, i) => requireUuid(`${field}[${i}]`, id)))];
}
