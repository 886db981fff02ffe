import { createHash } from "node:crypto";
import type { Call } from "../../calls/call.js";
import type { HookRequestRow } from "../../db/queries/hook-requests.js";
import type { TransformSandboxes } from "../../sandbox/transform-sandbox.js";
import { callFromJson } from "../call-from-json.js";
import { callTooLarge, limits } from "../limits.js";
import { buildCallPayload } from "../payload.js";
import { validateCall } from "../validate.js";
import { hookInputJson, hookInputOf, type HookInput, type HookProcessingSettings } from "./hook-input.js";

/** What one request makes: its calls (messageIds set), or why it fails. */
export type HookCalls = { ok: true; calls: Call[]; raw: unknown[] } | { ok: false; error: string };

/** The most calls one request may make: what one /v1 batch may carry. */
export const maxCallsPerRequest = limits.maxBatchMessages;
/** The most bytes a transform's result may have: one call's, which is more than one /v1 batch's. */
export const maxTransformResultBytes = limits.maxHookCallBytes;
/** The most bytes one call may have: room for any body the inbound URL accepts (docs/limits.md). */
export const maxHookCallBytes = limits.maxHookCallBytes;

/** The messageId of a request's call: the same every time the request is processed, so a call is never stored twice. */
export function hookMessageId(requestId: string, index: number): string {
  return `hook-${requestId}-${index}`;
}

/** The sandbox a source's transform runs in: a new one whenever the transform changes. */
export function hookSandboxKey(sourceId: string, transform: string): string {
  return `hook:${sourceId}:${createHash("sha256").update(transform).digest("hex").slice(0, 16)}`;
}

export interface HookCallsOptions {
  sandboxes: TransformSandboxes;
}

/**
 * The calls a stored request makes under the given settings: the
 * transform's, run in the source's sandbox, or the default mapping's.
 * Each is read like a `/v1` call, validated like any call, and given its
 * derived messageId and (unless it has one) the request's receipt time as
 * its timestamp. One bad call fails the whole request: none of its calls
 * is stored until all of them are good.
 */
export async function callsOfHookRequest(
  row: HookRequestRow,
  settings: HookProcessingSettings,
  sandboxKey: string,
  options: HookCallsOptions,
): Promise<HookCalls> {
  const input = hookInputOf(row);
  let raw: unknown[];
  if (settings.transform === "") {
    raw = [defaultCall(row, input, settings.verifier)];
  } else {
    const outcome = await options.sandboxes.run(sandboxKey, wrapHookTransform(settings.transform), hookInputJson(input), {
      maxResultBytes: maxTransformResultBytes + 32,
    });
    if (outcome.kind === "error") return { ok: false, error: `transform: ${outcome.message}` };
    if (outcome.kind !== "send") return { ok: false, error: "transform: did not run" };
    const result = (JSON.parse(outcome.body) as { calls?: unknown }).calls;
    if (result === null || result === undefined) raw = [];
    else if (Array.isArray(result)) raw = result;
    else if (typeof result === "object") raw = [result];
    else return { ok: false, error: `transform: must return an array of calls (or one call, or null), not ${typeof result}` };
  }
  if (raw.length > maxCallsPerRequest) {
    return { ok: false, error: `transform: returned ${raw.length} calls, over the limit of ${maxCallsPerRequest} per request` };
  }
  const calls: Call[] = [];
  for (const [index, item] of raw.entries()) {
    const parsed = callFromJson(item);
    if (parsed.problem) return { ok: false, error: `call ${index}: ${parsed.problem.reason}` };
    const call = parsed.call;
    call.messageId = hookMessageId(row.id, index);
    call.timestamp ??= row.received_at;
    const problem = validateCall(call);
    if (problem) return { ok: false, error: `call ${index}: ${problem.message}` };
    const size = Buffer.byteLength(buildCallPayload(call, call.messageId, row.received_at));
    if (size > maxHookCallBytes) return { ok: false, error: `call ${index}: ${callTooLarge(size, maxHookCallBytes)}` };
    calls.push(call);
  }
  return { ok: true, calls, raw };
}

/**
 * Without a transform: one track, named by the sender where the verifier
 * says who it is, with the body as its properties (a body that is no JSON
 * object goes under `properties.body`) and the idempotency key, else the
 * request's id, as its anonymousId.
 */
export function defaultCall(
  row: Pick<HookRequestRow, "id" | "idempotency_key">,
  input: HookInput,
  verifier: string,
): Record<string, unknown> {
  const body = input.body;
  const isObject = typeof body === "object" && body !== null && !Array.isArray(body);
  return {
    type: "track",
    event: defaultEventName(input, verifier),
    anonymousId: row.idempotency_key || `hook-${row.id}`,
    properties: isObject ? body : { body },
  };
}

function defaultEventName(input: HookInput, verifier: string): string {
  const named = (value: unknown) => (typeof value === "string" && value.trim() !== "" ? value : undefined);
  const body = input.body as Record<string, unknown> | null;
  const name =
    verifier === "stripe"
      ? named(typeof body === "object" && body !== null ? body.type : undefined)
      : verifier === "github"
        ? named(input.headers["x-github-event"])
        : verifier === "shopify"
          ? named(input.headers["x-shopify-topic"])
          : undefined;
  return name ?? "Webhook Received";
}

/**
 * The source wrapped so that the sandbox's harness (one object in, one
 * object out) carries a webhook transform: `transform(request)` returns
 * calls, handed back under `calls`. Appended after the user's code, so
 * line numbers in errors stay the user's.
 */
export function wrapHookTransform(source: string): string {
  return `${source}
;(function (user) {
  globalThis.transform = function (request) {
    if (typeof user !== "function") throw new TypeError("the source must define function transform(request)");
    var out = user(request);
    return { calls: out === undefined ? null : out };
  };
})(typeof transform === "function" ? transform : undefined);`;
}
