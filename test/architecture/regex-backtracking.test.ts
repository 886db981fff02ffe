import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { expect, test } from "vitest";

// Every regular expression literal in src/ (the console's browser app
// included: it parses what the server sends), run on 64 KB adversarial
// inputs. A pattern that backtracks (nested or adjacent quantifiers over
// the same characters, a lazy group before an optional tail) takes seconds
// on such an input, and on the main thread a request's header or path is
// enough to stall every other request. Those that read untrusted input
// (headers, verifiers, auth, paths, bodies) are the reason; the rest are
// held to the same rule so that none becomes one unnoticed.

const srcDir = new URL("../../src/", import.meta.url).pathname;
/**
 * Inputs grow to 64 KB in steps, and a pattern stops at the first step over
 * the bound: a quadratic one is caught at 8 KB in a fraction of a second
 * rather than minutes at 64 KB.
 */
const inputLengths = [1024, 8 * 1024, 64 * 1024];
/** Linear patterns take well under a millisecond here; a backtracking one takes seconds. Generous for a loaded machine. */
const boundMs = 250;

interface Literal {
  where: string;
  pattern: RegExp;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(full);
    return /\.tsx?$/.test(entry.name) ? [full] : [];
  });
}

function literalsOf(file: string): Literal[] {
  const text = readFileSync(file, "utf8");
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: Literal[] = [];
  const visit = (node: ts.Node) => {
    if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) {
      const literal = node.getText(source);
      const end = literal.lastIndexOf("/");
      const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
      // Without g and y, so that each exec starts from the beginning.
      const flags = literal.slice(end + 1).replace(/[gy]/g, "");
      found.push({ where: `${path.relative(srcDir, file)}:${line + 1} ${literal}`, pattern: new RegExp(literal.slice(1, end), flags) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const literals = tsFiles(srcDir).flatMap(literalsOf);

/** The literal text a pattern starts with ("Bearer" of /^Bearer\s+/), so that inputs get past it. */
function leadingText(pattern: RegExp): string {
  return /^\^?((?:[A-Za-z0-9_ ,;:=-]|\\[/.-])*)/.exec(pattern.source)![1]!.replace(/\\/g, "");
}

const fillers = [" ", "\t", "a", "A", "0", "/", ".", "=", ",", "-", "_", ":", ";", "x", '"', "\\", "%", "\n", "é"];

/** For each filler: runs of it alone, after the pattern's leading text, and between a token and a bad last character. */
function adversarialInputs(pattern: RegExp, length: number): string[] {
  const lead = leadingText(pattern);
  return fillers.flatMap((filler) => {
    const run = filler.repeat(length);
    return [run, `${run}\u0001`, `${lead}${run}\u0001`, `${lead} a${run}\u0001`, `${lead} a${run}b`, `a${run}!`];
  });
}

function slowestRun(pattern: RegExp): { ms: number; input: string } {
  let slowest = { ms: 0, input: "" };
  for (const length of inputLengths) {
    for (const input of adversarialInputs(pattern, length)) {
      const started = performance.now();
      pattern.exec(input);
      const ms = performance.now() - started;
      if (ms > slowest.ms) slowest = { ms, input };
      if (ms >= boundMs) return slowest;
    }
  }
  return slowest;
}

test("the scan finds the regular expressions of src/", () => {
  // A guard against a scan that finds nothing and so passes everything.
  expect(literals.length).toBeGreaterThan(50);
  expect(literals.some(({ where }) => where.startsWith("ingest/hooks/verifiers.ts"))).toBe(true);
});

test("src/ builds no regular expression from a string (the scan above could not see it)", () => {
  const built = tsFiles(srcDir).filter((file) => /new RegExp\(|RegExp\(/.test(readFileSync(file, "utf8")));
  expect(built.map((file) => path.relative(srcDir, file))).toEqual([]);
});

test.each(literals.map((literal) => [literal.where, literal.pattern] as const))(
  "%s runs in linear time on 64 KB adversarial inputs",
  (_where, pattern) => {
    const slowest = slowestRun(pattern);
    expect(slowest.ms, `slowest on ${JSON.stringify(slowest.input.slice(0, 40))}... (${slowest.input.length} chars)`).toBeLessThan(boundMs);
  },
);
