import type { WebhookBatch } from "../../../../gen/waypost/v1/destination_pb.js";
import { InvalidInputError } from "../../../errors.js";

/** How one webhook URL's batches are bounded, as stored (defaults filled in). */
export interface StoredWebhookBatch {
  maxCalls: number;
  maxBytes: number;
  maxWaitMs: number;
}

export const webhookBatchLimits = {
  minCalls: 2,
  maxCalls: 1000,
  minBytes: 1024,
  /** 500 KB. */
  maxBytes: 512_000,
  /** 256 KB, when unset. */
  defaultBytes: 262_144,
  maxWaitMs: 60_000,
  defaultWaitMs: 1000,
} as const;

function bounded(field: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new InvalidInputError(field, `must be from ${min} to ${max}, got ${value}`);
  }
  return value;
}

/** A webhook's batch settings from a request; undefined: calls go one per POST. */
export function validateWebhookBatch(field: string, batch: WebhookBatch | undefined): StoredWebhookBatch | undefined {
  if (!batch) return undefined;
  const limits = webhookBatchLimits;
  if (batch.maxCalls === 0) throw new InvalidInputError(`${field}.maxCalls`, `is required: ${limits.minCalls} to ${limits.maxCalls}`);
  return {
    maxCalls: bounded(`${field}.maxCalls`, batch.maxCalls, limits.minCalls, limits.maxCalls),
    maxBytes: bounded(`${field}.maxBytes`, batch.maxBytes ?? limits.defaultBytes, limits.minBytes, limits.maxBytes),
    maxWaitMs: bounded(`${field}.maxWaitMs`, batch.maxWaitMs ?? limits.defaultWaitMs, 0, limits.maxWaitMs),
  };
}
