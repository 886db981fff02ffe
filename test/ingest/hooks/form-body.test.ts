import { describe, expect, test } from "vitest";
import { decodeFormBody, isFormEncoded } from "../../../src/ingest/hooks/form-body.js";
import { hookInputJson, hookInputOf } from "../../../src/ingest/hooks/hook-input.js";

// Form-encoded webhook bodies read as what they stand for: GitHub's
// `payload=<JSON>` as that JSON, other forms as their fields; bodies that
// are JSON whatever their label, and bodies of other types, as before.

function stored(body: string, contentType: string) {
  return { method: "POST", headers: { "content-type": contentType }, query: "", content_type: contentType, body: Buffer.from(body) };
}

describe("decodeFormBody", () => {
  test("a lone payload field holding JSON is that JSON, kept as the text it was sent as", () => {
    const json = '{"action":"opened","number":7,"title":"a+b & c=d"}';
    const decoded = decodeFormBody(new URLSearchParams({ payload: json }).toString());
    expect(decoded).toEqual({ value: { action: "opened", number: 7, title: "a+b & c=d" }, json });
  });

  test("other forms are their fields; a repeated field an array; a payload that is no JSON, or beside other fields, a field", () => {
    expect(decodeFormBody("From=%2B15551234&Body=hi+there&Tag=a&Tag=b")?.value).toEqual({
      From: "+15551234",
      Body: "hi there",
      Tag: ["a", "b"],
    });
    expect(decodeFormBody("payload=not+json")?.value).toEqual({ payload: "not json" });
    expect(decodeFormBody("payload=%7B%7D&x=1")?.value).toEqual({ payload: "{}", x: "1" });
    expect(decodeFormBody("__proto__=1")?.json).toBe('{"__proto__":"1"}');
    expect(decodeFormBody("")).toBeUndefined();
  });

  test("the content type is the form encoding whatever its parameters and case", () => {
    expect(isFormEncoded("Application/X-WWW-Form-Urlencoded; charset=utf-8")).toBe(true);
    expect(isFormEncoded("application/json")).toBe(false);
    expect(isFormEncoded(undefined)).toBe(false);
  });
});

describe("hookInputOf", () => {
  test("GitHub's form body gives the transform the payload as `body` and the encoded text as `rawBody`", () => {
    const raw = new URLSearchParams({ payload: '{"zen":"Keep it logically awesome."}' }).toString();
    const input = hookInputOf(stored(raw, "application/x-www-form-urlencoded"));
    expect(input.body).toEqual({ zen: "Keep it logically awesome." });
    expect(input.rawBody).toBe(raw);
    expect(JSON.parse(hookInputJson(input))).toMatchObject({ body: { zen: "Keep it logically awesome." }, rawBody: raw });
  });

  test("JSON labelled as a form stays JSON; a form body labelled text stays text", () => {
    expect(hookInputOf(stored('{"a":1}', "application/x-www-form-urlencoded")).body).toEqual({ a: 1 });
    expect(hookInputOf(stored("payload=%7B%7D", "text/plain")).body).toBe("payload=%7B%7D");
  });
});
