import { RE2JS } from "re2js";

/** What Ajv needs of a regular expression: `test`, and a text that tells patterns apart. */
export interface LinearPattern {
  test(value: string): boolean;
  toString(): string;
}

/** A pattern the linear-time engine cannot run (a backreference, a lookaround...). */
export class UnsupportedPatternError extends Error {
  override name = "UnsupportedPatternError";
}

/**
 * Compiles a JSON Schema pattern (ECMA-262 syntax) for RE2JS, the pure
 * JavaScript port of RE2: it matches in time linear in the value, so no
 * pattern a plan's author writes can stall the event loop on a value a
 * write-key holder sends (a backtracking engine takes exponential time on
 * `^(a+)+$` against `aaa…!`). RE2 has no backreferences or lookaround;
 * such a pattern is an UnsupportedPatternError, and plans are refused with it.
 * `\uXXXX` and `\u{…}` escapes are rewritten to RE2's `\x{…}`.
 */
export function linearPattern(source: string): LinearPattern {
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(toRe2Syntax(source));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new UnsupportedPatternError(
      `${JSON.stringify(source)} cannot be matched in linear time (${reason}); backreferences and lookaround are not supported`,
    );
  }
  const text = `/${source}/`;
  return { test: (value) => compiled.test(value), toString: () => text };
}

/**
 * Ajv's `code.regExp` option: every `pattern` and `patternProperties` of a
 * schema compiled by that Ajv instance runs on RE2JS. `code` is only read
 * when Ajv writes standalone modules, which Waypost does not.
 */
export const linearRegExpEngine = Object.assign((source: string, _flags: string) => linearPattern(source), {
  code: 'require("re2js").RE2JS.compile',
});

/** ECMA-262 `\uXXXX` / `\u{X…}` as RE2's `\x{X…}`; everything else as written. */
function toRe2Syntax(source: string): string {
  if (!source.includes("\\u")) return source;
  let out = "";
  for (let i = 0; i < source.length; i += 1) {
    const char = source[i]!;
    if (char !== "\\") {
      out += char;
      continue;
    }
    const next = source[i + 1];
    if (next === "u") {
      const braced = /^\{([0-9A-Fa-f]{1,6})\}/.exec(source.slice(i + 2, i + 10));
      const plain = /^[0-9A-Fa-f]{4}/.exec(source.slice(i + 2, i + 6));
      if (braced) {
        out += `\\x{${braced[1]}}`;
        i += 1 + braced[0].length;
        continue;
      }
      if (plain) {
        out += `\\x{${plain[0]}}`;
        i += 5;
        continue;
      }
    }
    // Any other escape is copied whole, so `\\u` stays a backslash then "u".
    out += char + (next ?? "");
    i += 1;
  }
  return out;
}
