import { createHash } from "node:crypto";
import type { AttemptResult } from "../../../db/job-table/index.js";

/*
 * A receiver may refuse a batch for its size alone: then each call in it
 * may well be fine, and failing them all for good would lose innocent
 * calls with the one too large. Such a batch is sent again in two halves,
 * and so on down to single calls: only a call too large alone fails.
 */

// A 400 is most often a real refusal of the content; only one whose body
// says plainly that it is about size is taken as "too large" (frameworks'
// wording: "request entity too large", "payload too large", "body too big").
const sizeRefusal = /too (?:large|big)/i;

/**
 * Whether the receiver refused a POST because its body is too large: a 413,
 * or a 400 whose response body says "too large" or "too big".
 */
export function isTooLarge(result: AttemptResult): boolean {
  if (result.statusCode === 413) return true;
  return result.statusCode === 400 && result.responseBody !== null && sizeRefusal.test(result.responseBody);
}

/** The two halves a refused batch is sent again as: by count, the first half the larger. */
export function halves<T>(calls: readonly T[]): [T[], T[]] {
  const middle = Math.ceil(calls.length / 2);
  return [calls.slice(0, middle), calls.slice(middle)];
}

/** The error a refused batch's attempt records, saying what happened next. */
export function splitNote(result: AttemptResult, calls: number, bytes: number): string {
  const said = result.error === null ? "" : `${result.error}; `;
  return `${said}the receiver refused ${bytes} bytes (${calls} calls) as too large: sent again in smaller batches`;
}

/**
 * A batch POST's webhook-id: derived from the deliveries it carries, so
 * the same calls sent again together (a retry, a takeover after a crash)
 * carry the same id and a receiver can drop the repeat, while every other
 * set of calls (each half of a split batch) has an id of its own. A UUID
 * in form (version 8: made by the application).
 */
export function batchWebhookId(destinationId: string, deliveryIds: readonly string[]): string {
  const hash = createHash("sha256").update(destinationId);
  for (const id of [...deliveryIds].sort()) hash.update(`\n${id}`);
  const hex = hash.digest("hex");
  const variant = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
