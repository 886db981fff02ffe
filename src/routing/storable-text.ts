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

/**
 * Refuses a JSON value (a filter's operand) holding unstorable text in a
 * string or a key, naming where. Iterative; the filter's byte limit bounds it.
 */
export function requireStorableJson(value: unknown, field: string): void {
  const stack: Array<[unknown, string]> = [[value, field]];
  while (stack.length > 0) {
    const [current, path] = stack.pop()!;
    if (typeof current === "string") {
      const problem = unstorableTextProblem(current);
      if (problem) throw new InvalidInputError(path, problem);
      continue;
    }
    if (current === null || typeof current !== "object") continue;
    if (Array.isArray(current)) {
      current.forEach((child, i) => {
        stack.push([child, `${path}[${i}]`]);
      });
      continue;
    }
    for (const [key, child] of Object.entries(current)) {
      requireStorableKey(key, path);
      stack.push([child, `${path}.${key}`]);
    }
  }
}

/** A key is named JSON-escaped, so the error never carries the NUL itself. */
export function requireStorableKey(key: string, field: string): void {
  const problem = unstorableTextProblem(key);
  if (problem) throw new InvalidInputError(field, `the key ${JSON.stringify(key)} ${problem}`);
}
