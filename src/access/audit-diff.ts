// What an audit row says changed: a flat map of dotted paths to their old
// and new values, computed from the API's own JSON of the thing before and
// after. Secrets never appear: a field whose name says it holds one reads
// only "changed", a header that carries credentials likewise, and a URL's
// password is cut out. Big values are cut short, so a row stays small.

type Json = unknown;
export type AuditDiff = Record<string, { from?: Json; to?: Json } | "changed">;

// "token" alone is left out: it also names a resource (an API token's
// description); a field of that name holding a string is a secret all the same.
const secretName =
  /secret|password|passwd|api[-_]?key|credential|private|authorization|cookie|write[-_]?key|access[-_]?key|signing[-_]?key|(?:access|auth|hook|refresh|bearer|session|csrf|id)[-_]?token/i;
const maxString = 200;
const maxArray = 20;
const maxEntries = 200;

export function isSecretName(name: string): boolean {
  return secretName.test(name);
}

/** A field holding a secret: by its name, or a bare "token" or "secret" string. */
function isSecretField(name: string, value: Json): boolean {
  return isSecretName(name) || (typeof value === "string" && /^(token|secret)$/i.test(name));
}

/** A URL without the password of its userinfo. */
function withoutPassword(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/@:\s]*):[^/@\s]*@/i, "$1:***@");
}

/** A value safe and small enough to keep: secrets by name replaced, URLs without passwords, long things cut. */
export function redacted(value: Json, depth = 0): Json {
  if (typeof value === "string") {
    const clean = withoutPassword(value);
    return clean.length > maxString ? `${clean.slice(0, maxString)}… (${clean.length} characters)` : clean;
  }
  if (Array.isArray(value)) {
    if (value.length > maxArray) return `(${value.length} items)`;
    return value.map((item) => redacted(item, depth + 1));
  }
  if (value && typeof value === "object") {
    if (depth > 6) return "(nested)";
    const out: Record<string, Json> = {};
    for (const [key, item] of Object.entries(value)) out[key] = isSecretField(key, item) ? "(set)" : redacted(item, depth + 1);
    return out;
  }
  return value;
}

function flatten(value: Json, path: string, into: Map<string, Json>, depth: number): void {
  if (value && typeof value === "object" && !Array.isArray(value) && depth < 6) {
    for (const [key, item] of Object.entries(value)) flatten(item, path ? `${path}.${key}` : key, into, depth + 1);
    return;
  }
  into.set(path, value);
}

/** A leaf's path holds a secret when its own name or an enclosing object's says so. */
const secretPath = (path: string, value: Json) => {
  const names = path.split(".");
  return names.slice(0, -1).some(isSecretName) || isSecretField(names[names.length - 1]!, value);
};

/**
 * The fields that differ between `before` and `after` (either may be
 * undefined: a creation or a deletion). A secret field that differs reads
 * "changed", whatever either value was.
 */
export function auditDiff(before: Json, after: Json): AuditDiff {
  const old = new Map<string, Json>();
  const now = new Map<string, Json>();
  if (before !== undefined) flatten(before, "", old, 0);
  if (after !== undefined) flatten(after, "", now, 0);
  const diff: AuditDiff = {};
  let entries = 0;
  for (const path of new Set([...old.keys(), ...now.keys()])) {
    const [from, to] = [old.get(path), now.get(path)];
    if (JSON.stringify(from) === JSON.stringify(to)) continue;
    if (++entries > maxEntries) {
      diff["(more)"] = { to: "more fields changed than an audit row keeps" };
      break;
    }
    if (secretPath(path, from) || secretPath(path, to)) {
      diff[path] = "changed";
      continue;
    }
    const entry: { from?: Json; to?: Json } = {};
    if (from !== undefined) entry.from = redacted(from);
    if (to !== undefined) entry.to = redacted(to);
    diff[path || "(value)"] = entry;
  }
  return diff;
}

/**
 * The secret fields a request sets (non-empty), as "changed": the API
 * never shows a secret, so before and after cannot tell that one changed.
 * Paths are relative to the resource a request wraps ("destination.x" → "x").
 */
export function secretsSet(request: Record<string, unknown>): AuditDiff {
  const paths = new Map<string, Json>();
  flatten(request, "", paths, 0);
  const diff: AuditDiff = {};
  for (const [path, value] of paths) {
    if (!secretPath(path, value) || value === "" || value === false || value === undefined || value === null) continue;
    const [head, ...rest] = path.split(".");
    const wrapped = rest.length > 0 && typeof request[head!] === "object";
    diff[wrapped ? rest.join(".") : path] = "changed";
  }
  return diff;
}
