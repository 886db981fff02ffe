import type { HookRequestRow } from "../../db/queries/hook-requests.js";
import { decodeFormBody, isFormEncoded } from "./form-body.js";

/** What processing reads of a webhook source's stored settings (the rest is receipt's). */
export interface HookProcessingSettings {
  /** The verifier names the default mapping's event (Stripe's `type`, GitHub's and Shopify's topic headers). */
  verifier: string;
  /** JavaScript defining `function transform(request)`; "" for the default mapping. */
  transform: string;
}

/** The settings jsonb as processing reads it; anything missing reads as the default. */
export function readProcessingSettings(json: Record<string, unknown>): HookProcessingSettings {
  return {
    verifier: typeof json.verifier === "string" ? json.verifier : "none",
    transform: typeof json.transform === "string" ? json.transform : "",
  };
}

/** A stored request as the transform and the default mapping see it. */
export interface HookInput {
  method: string;
  /** Header names in lower case; a header sent several times is its values joined by ", ". */
  headers: Record<string, string>;
  /** The query string parsed: a key given several times is an array of its values. */
  query: Record<string, string | string[]>;
  /**
   * Parsed JSON when the body is JSON (by its content type, or because it
   * parses); a form-encoded body decoded (form-body.ts); else the text.
   */
  body: unknown;
  /** The body as text (invalid UTF-8 replaced). */
  rawBody: string;
  /** The body as JSON text, when it parsed or was decoded: spliced into the transform's input as it is (never re-serialised). */
  bodyJson: string | undefined;
}

export function hookInputOf(row: Pick<HookRequestRow, "method" | "headers" | "query" | "content_type" | "body">): HookInput {
  const rawBody = row.body.toString("utf8");
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(row.headers ?? {})) {
    const text = Array.isArray(value) ? value.map(String).join(", ") : typeof value === "string" ? value : JSON.stringify(value);
    headers[name.toLowerCase()] = text;
  }
  const query: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (const [key, value] of new URLSearchParams(row.query)) {
    const had = query[key];
    query[key] = had === undefined ? value : Array.isArray(had) ? [...had, value] : [had, value];
  }
  let body: unknown = rawBody;
  let bodyJson: string | undefined;
  // Whatever the content type says: senders label JSON text/plain or
  // form-encoded often enough, and a body that does not parse stays text.
  const text = rawBody.charCodeAt(0) === 0xfeff ? rawBody.slice(1) : rawBody;
  if (text.trim() !== "") {
    try {
      body = JSON.parse(text);
      bodyJson = text;
    } catch {
      // A form-encoded body reads as what it stands for: GitHub's
      // `payload=<JSON>` as that JSON, other forms as their fields.
      const form = isFormEncoded(row.content_type) ? decodeFormBody(rawBody) : undefined;
      body = form ? form.value : rawBody;
      bodyJson = form?.json;
    }
  }
  return { method: row.method, headers, query: { ...query }, body, rawBody, bodyJson };
}

/**
 * The transform's argument as JSON text. The parsed body goes in as the
 * text it was parsed from: a deeply nested body would overflow
 * JSON.stringify's recursion here; inside the sandbox it is bounded by the
 * sandbox's own limits.
 */
export function hookInputJson(input: HookInput): string {
  const body = input.bodyJson ?? JSON.stringify(input.rawBody);
  return `{"method":${JSON.stringify(input.method)},"headers":${JSON.stringify(input.headers)},"query":${JSON.stringify(input.query)},"body":${body},"rawBody":${JSON.stringify(input.rawBody)}}`;
}
