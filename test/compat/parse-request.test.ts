import { describe, expect, test } from "vitest";
import { CompatError } from "../../src/compat/errors.js";
import { parseJsonBody, parseRequest } from "../../src/compat/parse-request.js";

describe("parseRequest", () => {
  test("a batch-level __proto__ key is copied as data, never as a prototype", () => {
    const body = parseJsonBody(
      Buffer.from('{"batch":[{"type":"track","userId":"u","event":"E"}],"context":{"__proto__":{"polluted":true}}}'),
    );
    const [message] = parseRequest({ kind: "batch" }, body).messages;
    const context = message!.call!.context!;
    expect(Object.getPrototypeOf(context)).toBe(Object.prototype);
    expect(Object.hasOwn(context, "__proto__")).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("parseJsonBody", () => {
  test("a UTF-8 byte order mark is skipped", () => {
    expect(parseJsonBody(Buffer.from('\ufeff{"batch":[]}'))).toEqual({ batch: [] });
  });

  test.each(["", "   ", "nul", "[]", "1", "{"])("%j is a 400", (text) => {
    expect(() => parseJsonBody(Buffer.from(text))).toThrowError(CompatError);
  });
});
