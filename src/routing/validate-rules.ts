import { InvalidInputError } from "../errors.js";
import { validateDropFields } from "./drop-fields.js";
import { compileFilter, isPlainObject } from "./filter.js";
import { routingLimits } from "./filter-limits.js";
import type { TransformSandboxes } from "../sandbox/transform-sandbox.js";

/** A filter as stored: null when absent or empty (every call passes). */
export function validateFilter(field: string, filter: unknown): Record<string, unknown> | null {
  if (filter === undefined || filter === null) return null;
  compileFilter(filter, field);
  return isPlainObject(filter) && Object.keys(filter).length > 0 ? filter : null;
}

export function validateDropFieldList(field: string, paths: readonly string[]): string[] {
  validateDropFields(paths, field);
  return [...new Set(paths)];
}

/**
 * A transform's source: at most 64 KB, and it must parse; a syntax error is
 * refused with the parser's message and line. Nothing is run.
 */
export async function validateTransform(field: string, source: string, sandboxes: TransformSandboxes): Promise<string> {
  if (source.trim() === "") return "";
  const bytes = Buffer.byteLength(source);
  if (bytes > routingLimits.maxTransformBytes) {
    throw new InvalidInputError(field, `is ${bytes} bytes, over the limit of ${routingLimits.maxTransformBytes} bytes (64 KB)`);
  }
  if (source.includes("\0")) throw new InvalidInputError(field, "must not contain NUL characters");
  const syntax = await sandboxes.syntaxError(source);
  if (syntax) throw new InvalidInputError(field, syntax);
  if (!/\bfunction\s+transform\s*\(|\btransform\s*=/.test(source)) {
    throw new InvalidInputError(field, "must define function transform(event)");
  }
  return source;
}
