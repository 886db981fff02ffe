import { InvalidInputError, storableTextProblem } from "../errors.js";
import { isPlainObject } from "./filter.js";

/** A destination's consent settings (docs/routing.md#consent). */
export interface ConsentRule {
  /** Categories a call's preferences must all grant; empty: none. */
  categories: readonly string[];
  /** Whether a call that carries no preferences object is held back. */
  required: boolean;
}

/** Whether a call's body may be routed to the destination; compiled once per destination revision. */
export type CompiledConsent = (body: unknown) => boolean;

export const consentLimits = {
  maxCategories: 20,
  maxCategoryLength: 100,
} as const;

/**
 * The consent check of a destination, or undefined when it lets every call
 * through (no categories, consent not required): routing skips those
 * destinations entirely. The conventions are Segment's consent management:
 * a call whose `context.consent.categoryPreferences` is an object is routed
 * only when every category listed is `true` there (exactly true: "yes", 1
 * or a missing key do not grant it); a call without that object (absent,
 * null, an array, a string) says nothing about consent and is routed unless
 * the destination requires consent.
 */
export function compileConsent(rule: ConsentRule): CompiledConsent | undefined {
  const categories = [...rule.categories];
  const required = rule.required;
  if (categories.length === 0 && !required) return undefined;
  return (body) => {
    const preferences = preferencesOf(body);
    if (preferences === undefined) return !required;
    for (const category of categories) if (preferences[category] !== true) return false;
    return true;
  };
}

/** The call's `context.consent.categoryPreferences` when it is an object; undefined otherwise. */
export function preferencesOf(body: unknown): Record<string, unknown> | undefined {
  if (!isPlainObject(body)) return undefined;
  const context = body.context;
  if (!isPlainObject(context)) return undefined;
  const consent = context.consent;
  if (!isPlainObject(consent)) return undefined;
  const preferences = consent.categoryPreferences;
  return isPlainObject(preferences) ? preferences : undefined;
}

/**
 * A destination's consent categories as stored: at most 20, each 1 to 100
 * characters of storable text, kept as given (category names are matched
 * exactly, case and spaces included); repeats are dropped. Refused naming
 * the entry (`destination.consentCategories[3]`).
 */
export function validateConsentCategories(field: string, categories: readonly string[]): string[] {
  if (categories.length > consentLimits.maxCategories) {
    throw new InvalidInputError(field, `at most ${consentLimits.maxCategories} categories, not ${categories.length}`);
  }
  categories.forEach((category, i) => {
    const at = `${field}[${i}]`;
    if (category.length === 0) throw new InvalidInputError(at, "must not be empty");
    if (category.length > consentLimits.maxCategoryLength) {
      throw new InvalidInputError(at, `is longer than ${consentLimits.maxCategoryLength} characters`);
    }
    const problem = storableTextProblem(category);
    if (problem) throw new InvalidInputError(at, problem);
  });
  return [...new Set(categories)];
}
