// Placeholder until the sources piece lands (its version replaces this file
// on merge): NONE and TOKEN only, with the contract's signatures.
import { timingSafeEqual } from "node:crypto";
import type { HookSettings } from "./hook-settings.js";

export interface HookRequestToVerify {
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  now: Date;
}

export function verifyHookRequest(settings: HookSettings, request: HookRequestToVerify): { ok: true } | { ok: false; reason: string } {
  if (settings.verifier === "none") return { ok: true };
  if (settings.verifier === "token") {
    const name = (settings.tokenHeader || "authorization").toLowerCase();
    const raw = request.headers[name];
    const value = typeof raw === "string" ? raw : undefined;
    if (value === undefined) return { ok: false, reason: `missing ${name} header` };
    const expected = Buffer.from(settings.tokenHeader ? settings.secret : `Bearer ${settings.secret}`);
    const got = Buffer.from(value);
    if (got.length !== expected.length || !timingSafeEqual(got, expected)) return { ok: false, reason: `wrong token in ${name}` };
    return { ok: true };
  }
  return { ok: false, reason: `verifier ${settings.verifier} is not available` };
}

export function idempotencyKeyOf(
  settings: HookSettings,
  headers: Record<string, string | string[] | undefined>,
  body: unknown,
): string | undefined {
  const name = settings.idempotencyKey;
  if (!name) return undefined;
  if (name.startsWith("$.")) {
    let value: unknown = body;
    for (const part of name.slice(2).split("."))
      value = value && typeof value === "object" ? (value as Record<string, unknown>)[part] : undefined;
    return typeof value === "string" || typeof value === "number" ? String(value) : undefined;
  }
  const value = headers[name.toLowerCase()];
  return typeof value === "string" && value !== "" ? value : undefined;
}
