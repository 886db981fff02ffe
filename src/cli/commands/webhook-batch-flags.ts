import type { Command } from "commander";
import type { Destination, WebhookBatch } from "../../../gen/waypost/v1/destination_pb.js";
import { UsageError } from "../errors.js";
import type { DestinationFlags } from "./destination-flag-types.js";

type BatchInit = { maxCalls: number; maxBytes?: number; maxWaitMs?: number };

/** --batch-max-calls, --batch-max-bytes, --batch-max-wait-ms: the batch settings of every URL given. */
export function declareBatchFlags(c: Command, mode: "create" | "update"): void {
  c.option(
    "--batch-max-calls <n>",
    mode === "create"
      ? 'send the calls to every URL many per POST, as {"batch":[...]}: at most n (2-1000) per POST'
      : "batch every URL's calls, at most n (2-1000) per POST; 0: one call per POST",
  );
  c.option("--batch-max-bytes <n>", "a batch body's most bytes (1024-512000; default 262144)");
  c.option("--batch-max-wait-ms <n>", "how long a batch's first call waits for more (0-60000; default 1000)");
}

export const batchFlagsGiven = (flags: DestinationFlags) =>
  [flags.batchMaxCalls, flags.batchMaxBytes, flags.batchMaxWaitMs].some((flag) => flag !== undefined);

function whole(flag: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const text = String(value).trim();
  // The server checks the range; beyond 32 bits it could not even be sent.
  if (!/^\d+$/.test(text) || Number(text) > 0x7fff_ffff) throw new UsageError(`${flag}: "${text}" is not a whole number`);
  return Number(text);
}

/**
 * A URL's batch settings: the flags given over what it has now (`stored`);
 * undefined: one call per POST (no batch, or --batch-max-calls 0).
 */
export function batchOf(flags: DestinationFlags, stored: WebhookBatch | undefined): BatchInit | undefined {
  const maxCalls = whole("--batch-max-calls", flags.batchMaxCalls);
  const maxBytes = whole("--batch-max-bytes", flags.batchMaxBytes);
  const maxWaitMs = whole("--batch-max-wait-ms", flags.batchMaxWaitMs);
  if (maxCalls === 0) return undefined;
  const calls = maxCalls ?? stored?.maxCalls;
  if (calls === undefined) {
    if (maxBytes !== undefined || maxWaitMs !== undefined)
      throw new UsageError("--batch-max-bytes and --batch-max-wait-ms need --batch-max-calls");
    return undefined;
  }
  return {
    maxCalls: calls,
    ...((maxBytes ?? stored?.maxBytes) !== undefined ? { maxBytes: maxBytes ?? stored?.maxBytes } : {}),
    ...((maxWaitMs ?? stored?.maxWaitMs) !== undefined ? { maxWaitMs: maxWaitMs ?? stored?.maxWaitMs } : {}),
  };
}

/** `destinations get`: one line per batched URL. */
export function batchDetails(d: Destination): Array<readonly [string, string]> {
  return d.webhooks.flatMap((w) =>
    w.batch ? [[`batch ${w.url}`, `${w.batch.maxCalls} calls, ${w.batch.maxBytes} bytes, ${w.batch.maxWaitMs} ms wait`] as const] : [],
  );
}
