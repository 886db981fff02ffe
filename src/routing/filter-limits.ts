import { sandboxLimits } from "../sandbox/sandbox-limits.js";

/** Limits of routing rules (docs/routing.md#limits). */
export const routingLimits = {
  /** A filter's JSON encoding, in bytes. */
  maxFilterBytes: 16 * 1024,
  /** Nesting of documents inside a filter ($and, $or, $not). */
  maxFilterDepth: 8,
  /** Conditions (one operator on one path) in a filter. */
  maxFilterConditions: 100,
  /** Elements of an $in or $nin list. */
  maxListValues: 100,
  /** A transform's source, in bytes. */
  maxTransformBytes: 64 * 1024,
  /** Dropped field paths. */
  maxDropFields: 50,
  /** A transform's result, in bytes (the call limit). */
  maxBodyBytes: sandboxLimits.maxResultBytes,
  /** The start of a transform's error kept on the attempt. */
  maxTransformErrorBytes: sandboxLimits.maxErrorBytes,
} as const;
