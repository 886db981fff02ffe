import { randomBytes } from "node:crypto";
import { describe, expect, test } from "vitest";
import { hookSettingsFromStored, validateHookSettings } from "../../../src/ingest/hooks/hook-settings.js";

const whsec = `whsec_${randomBytes(24).toString("base64")}`;

describe("validateHookSettings", () => {
  test("defaults: verifier none, the default response, no limit", async () => {
    expect(await validateHookSettings({})).toEqual({
      verifier: "none",
      secret: "",
      transform: "",
      idempotencyKey: "",
      response: { status: 200, contentType: "application/json", body: '{"accepted":true}' },
      tokenHeader: "",
      maxRequestsPerSecond: 0,
    });
  });

  test("hmac: defaults sha256 and hex; kept only with verifier hmac", async () => {
    const hmac = await validateHookSettings({ verifier: "hmac", secret: "k", hmac: { header: "X-Sig" } });
    expect(hmac.hmac).toEqual({ header: "X-Sig", algorithm: "sha256", encoding: "hex", prefix: "" });
    const github = await validateHookSettings({ verifier: "github", secret: "k", hmac: { header: "X-Sig" }, tokenHeader: "X-T" });
    expect(github.hmac).toBeUndefined();
    expect(github.tokenHeader).toBe("");
  });

  test.each([
    [{ verifier: "stripe" }, "source.webhook.secret: is required with verifier stripe"],
    [{ verifier: "none", secret: "x" }, "source.webhook.secret: must be empty with verifier none"],
    [{ verifier: "standard_webhooks", secret: "abc" }, "source.webhook.secret: must be whsec_ followed by base64"],
    [{ verifier: "standard_webhooks", secret: "whsec_not base64!" }, "source.webhook.secret: must be whsec_ followed by base64"],
    [
      { verifier: "standard_webhooks", secret: `whsec_${randomBytes(8).toString("base64")}` },
      "source.webhook.secret: must encode 16 to 128 bytes (it encodes 8)",
    ],
    [{ verifier: "basic", secret: "nopassword" }, "source.webhook.secret: must be user:password (both non-empty)"],
    [{ verifier: "basic", secret: "user:" }, "source.webhook.secret: must be user:password (both non-empty)"],
    [{ verifier: "token", secret: "a\r\nb" }, "source.webhook.secret: must not contain control characters"],
    [{ verifier: "hmac", secret: "k" }, "source.webhook.hmac.header: must be a header name (required with verifier hmac)"],
    [
      { verifier: "hmac", secret: "k", hmac: { header: "X-S", algorithm: "md5" } },
      "source.webhook.hmac.algorithm: must be sha1, sha256 or sha512",
    ],
    [{ verifier: "hmac", secret: "k", hmac: { header: "X-S", encoding: "b32" } }, "source.webhook.hmac.encoding: must be hex or base64"],
    [{ verifier: "token", secret: "k", tokenHeader: "X Bad" }, "source.webhook.token_header: must be a header name"],
    [{ response: { status: 302 } }, "source.webhook.response.status: must be 200 to 299"],
    [{ response: { status: 204, body: "x" } }, "source.webhook.response.body: must be empty with status 204"],
    [{ response: { body: "x".repeat(4097) } }, "source.webhook.response.body: must be at most 4096 bytes (4 KB)"],
    [{ idempotencyKey: "$." }, 'source.webhook.idempotency_key: must be a JSON path like "$.id" or "$.data.object.id"'],
    [{ idempotencyKey: "not a header" }, 'source.webhook.idempotency_key: must be a header name or a JSON path like "$.id"'],
    [{ transform: "x".repeat(64 * 1024 + 1) }, "source.webhook.transform: is 65537 bytes, over the limit of 65536 bytes (64 KB)"],
    [{ transform: "const a = 1;" }, "source.webhook.transform: must define function transform(request)"],
    [{ maxRequestsPerSecond: -1 }, "source.webhook.max_requests_per_second: must be a whole number, 0 or more"],
  ] as const)("%j is refused", async (input, message) => {
    await expect(validateHookSettings(input as never)).rejects.toThrow(message);
  });

  test("accepted: a whsec_ secret, basic user:password, a JSON path key, a 204 without a body", async () => {
    expect((await validateHookSettings({ verifier: "standard_webhooks", secret: whsec })).secret).toBe(whsec);
    expect((await validateHookSettings({ verifier: "basic", secret: "u:p:with:colons" })).secret).toBe("u:p:with:colons");
    expect((await validateHookSettings({ idempotencyKey: "$.data.object.id" })).idempotencyKey).toBe("$.data.object.id");
    expect((await validateHookSettings({ response: { status: 204 } })).response).toEqual({
      status: 204,
      contentType: "application/json",
      body: "",
    });
  });

  test("the field prefix can be changed (update requests)", async () => {
    await expect(validateHookSettings({ verifier: "github" }, { field: "draft.webhook" })).rejects.toThrow("draft.webhook.secret:");
  });
});

test("hookSettingsFromStored fills what a row lacks", () => {
  expect(hookSettingsFromStored({ verifier: "github", secret: "s" })).toMatchObject({
    verifier: "github",
    secret: "s",
    response: { status: 200, contentType: "application/json", body: '{"accepted":true}' },
  });
});
