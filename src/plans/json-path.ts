/** A key as it reads in a path: `.total`, or `["odd key"]` when it is not an identifier. */
export function keySegment(key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/**
 * A JSON pointer (`/items/0/price`, as Ajv reports where in a value it
 * looked) as a path under `root`: `properties.items[0].price`.
 */
export function pointerToPath(root: string, pointer: string): string {
  if (pointer === "") return root;
  let out = root;
  for (const raw of pointer.slice(1).split("/")) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    out += /^(0|[1-9]\d*)$/.test(key) ? `[${key}]` : keySegment(key);
  }
  return out;
}

/** JSON text of a value, cut to `max` characters (violations keep one such example). */
export function exampleText(value: unknown, max = 200): string {
  if (value === undefined) return "";
  const text = typeof value === "string" ? JSON.stringify(value) : (JSON.stringify(value) ?? "");
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
