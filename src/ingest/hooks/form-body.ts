/**
 * Form-encoded webhook bodies (`application/x-www-form-urlencoded`). Some
 * senders offer it beside JSON: GitHub posts `payload=<the JSON>`, Slack's
 * interactive callbacks the same, Twilio its fields one by one. Signatures
 * are computed over the encoded bytes, so a body is verified and stored as
 * sent; it is decoded only when read for processing (and for an
 * idempotency key that is a JSON path into it).
 */

/** The field a sender wraps its JSON in (GitHub, Slack). */
const payloadField = "payload";

/** Whether the content type is the form encoding (parameters such as `charset` ignored). */
export function isFormEncoded(contentType: string | undefined): boolean {
  if (!contentType) return false;
  return contentType.split(";", 1)[0]!.trim().toLowerCase() === "application/x-www-form-urlencoded";
}

/** A decoded form body: the value it stands for, and that value as JSON text. */
export interface DecodedForm {
  value: unknown;
  json: string;
}

/**
 * What a form body stands for: when its one field is `payload` holding
 * JSON, that JSON (GitHub's form encoding); otherwise its fields as an
 * object, a field given several times as an array of its values (as the
 * query string is read). An empty body is undefined.
 */
export function decodeFormBody(text: string): DecodedForm | undefined {
  const fields: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  let count = 0;
  for (const [key, value] of new URLSearchParams(text)) {
    const had = fields[key];
    // Pushed, not copied: 512 KB of `a&a&a…` is 260,000 values of one key.
    if (had === undefined) fields[key] = value;
    else if (Array.isArray(had)) had.push(value);
    else fields[key] = [had, value];
    count++;
  }
  if (count === 0) return undefined;
  const payload = fields[payloadField];
  if (count === 1 && typeof payload === "string") {
    const wrapped = parseJson(payload);
    if (wrapped !== undefined) return { value: wrapped, json: payload };
  }
  const plain = { ...fields };
  return { value: plain, json: JSON.stringify(plain) };
}

function parseJson(text: string): unknown {
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
