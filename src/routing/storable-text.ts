import { InvalidInputError } from "../errors.js";

// With the u flag a surrogate pair is one code point, so this matches unpaired halves only.
const loneSurrogate = /\p{Cs}/u;

/**
 * Why Postgres cannot store this text (text and jsonb hold neither NUL nor
 * an unpaired UTF-16 surrogate), or undefined. A filter is stored as jsonb,
 * so one holding such text would fail as the query's parameter, not as input.
 */
export function unstorableTextProblem(text: string): string | undefined {
  if (text.includes("\0")) return "must not contain NUL characters";
  if (loneSurrogate.test(text)) return "must not contain unpaired UTF-16 surrogates";
  return undefined;
}

/** Where findJsonText found its text: a string at `path`, or a key of the object at `path`. */
export type JsonTextHit = { path: string; text: string; key: boolean };

/**
 * The first string or key in a JSON value that `matches`, and where it is.
 * Iterative, so that hostile nesting cannot overflow the stack; callers bound
 * the depth (or the size) first.
 *
 * @param keyPath the path of an object's member, from the object's path and the key
 */
export function findJsonText(
  root: unknown,
  rootPath: string,
  keyPath: (path: string, key: string) => string,
  matches: (text: string) => boolean,
): JsonTextHit | undefined {
  const stack: Array<[unknown, string]> = [[root, rootPath]];
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (typeof value === "string") {
      if (matches(value)) return { path, text: value, key: false };
      continue;
    }
    if (value === null || typeof value !== "object") continue;
    if (Array.isArray(value)) {
      value.forEach((child, i) => {
        stack.push([child, `${path}[${i}]`]);
      });
      continue;
    }
    for (const [key, child] of Object.entries(value)) {
      if (matches(key)) return { path, text: key, key: true };
      stack.push([child, keyPath(path, key)]);
    }
  }
  return undefined;
}

/**
 * Refuses a JSON value (a filter's operand) holding unstorable text in a
 * string or a key, naming where. The filter's byte limit bounds it.
 */
export function requireStorableJson(value: unknown, field: string): void {
  const hit = findJsonText(
    value,
    field,
    (path, key) => `${path}.${key}`,
    (text) => unstorableTextProblem(text) !== undefined,
  );
  if (hit?.key) requireStorableKey(hit.text, hit.path);
  else if (hit) throw new InvalidInputError(hit.path, unstorableTextProblem(hit.text)!);
}

/** A key is named JSON-escaped, so the error never carries the NUL itself. */
export function requireStorableKey(key: string, field: string): void {
  const problem = unstorableTextProblem(key);
  if (problem) throw new InvalidInputError(field, `the key ${JSON.stringify(key)} ${problem}`);
}
