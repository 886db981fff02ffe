import { dropFields } from "./drop-fields.js";
import type { RunOptions, TransformSandboxes } from "../sandbox/transform-sandbox.js";

/** A destination's send-time rules: applied to the stored body when a delivery is sent. */
export interface BodyRules {
  dropFields: readonly string[];
  /** JavaScript source defining transform(event); "" for none. */
  transform: string;
  /** Names the sandbox kept for these rules: the destination and its settings revision. */
  sandboxKey: string;
}

export type ShapedBody =
  | { kind: "send"; body: string; transformMs?: number }
  | { kind: "dropped"; transformMs: number }
  | { kind: "error"; error: string; transformMs?: number }
  /** Not run: the destination's sandbox is too busy to run it soon (only with mayDefer). */
  | { kind: "busy" };

/**
 * Drops fields, then transforms: the exact bytes to send (and sign). With
 * neither set, the stored body is sent byte for byte, unparsed.
 */
export async function shapeBody(
  payload: string,
  rules: BodyRules,
  sandboxes: TransformSandboxes,
  runOptions?: RunOptions,
): Promise<ShapedBody> {
  if (rules.dropFields.length === 0 && rules.transform === "") return { kind: "send", body: payload };
  let body = payload;
  if (rules.dropFields.length > 0) {
    const parsed = JSON.parse(payload) as Record<string, unknown>;
    if (dropFields(parsed, rules.dropFields)) body = JSON.stringify(parsed);
  }
  if (rules.transform === "") return { kind: "send", body };
  const outcome = await sandboxes.run(rules.sandboxKey, rules.transform, body, runOptions);
  if (outcome.kind === "send") return { kind: "send", body: outcome.body, transformMs: outcome.elapsedMs };
  if (outcome.kind === "dropped") return { kind: "dropped", transformMs: outcome.elapsedMs };
  if (outcome.kind === "busy") return { kind: "busy" };
  return { kind: "error", error: `transform: ${outcome.message}`, transformMs: outcome.elapsedMs };
}
