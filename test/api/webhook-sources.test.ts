import { createHash } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect } from "vitest";
import { HookVerifier, SourceKind, type WebhookSourceSchema } from "../../gen/waypost/v1/source_pb.js";
import { selectHookSourceByTokenHash } from "../../src/db/queries/sources.js";
import { hookSettingsFromStored } from "../../src/ingest/hooks/hook-settings.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";

const test = testWith();

async function failure(promise: Promise<unknown>): Promise<ConnectError> {
  const error = await promise.then(
    () => undefined,
    (e) => ConnectError.from(e),
  );
  if (!error) throw new Error("expected the call to fail");
  return error;
}

const sha256 = (text: string) => createHash("sha256").update(text).digest();
const stripeSecret = "whsec_stripe_signing_secret_1";

async function createStripeSource(server: TestServer, name = "stripe") {
  const { source } = await server.sources.createSource({
    source: {
      name,
      kind: SourceKind.WEBHOOK,
      webhook: { verifier: HookVerifier.STRIPE, secret: stripeSecret, transform: "function transform(request) { return []; }" },
    },
  });
  return source!;
}

async function storedRow(server: TestServer, id: string) {
  const { rows } = await server.pool.query("SELECT kind, webhook, hook_token_hash FROM sources WHERE id = $1", [id]);
  return rows[0] as { kind: string; webhook: Record<string, unknown>; hook_token_hash: Buffer };
}

describe("creating a webhook source", () => {
  test("the token is shown once, stored as its sha256; the secret is never shown", async ({ server }) => {
    const source = await createStripeSource(server);
    expect(source.kind).toBe(SourceKind.WEBHOOK);
    expect(source.hookToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(source.writeKey).toMatch(/^wk_/);
    expect(source.webhook).toMatchObject({ verifier: HookVerifier.STRIPE, secret: "", hasSecret: true });
    expect(source.webhook?.response).toMatchObject({ status: 200, contentType: "application/json", body: '{"accepted":true}' });

    const row = await storedRow(server, source.id);
    expect(row.kind).toBe("webhook");
    expect(row.hook_token_hash.equals(sha256(source.hookToken))).toBe(true);
    expect(JSON.stringify(row)).not.toContain(source.hookToken);
    expect(row.webhook).toMatchObject({ verifier: "stripe", secret: stripeSecret, idempotencyKey: "" });

    const { source: got } = await server.sources.getSource({ id: source.id });
    expect(got?.hookToken).toBe("");
    expect(got?.writeKey).toBe("");
    expect(got?.webhook).toMatchObject({ verifier: HookVerifier.STRIPE, secret: "", hasSecret: true });
    expect(got?.webhook?.transform).toContain("function transform");
    const listed = (await server.sources.listSources({ pageSize: 1000 })).sources.find((s) => s.id === source.id);
    expect(listed?.kind).toBe(SourceKind.WEBHOOK);
    expect(listed?.webhook?.secret).toBe("");
    expect(listed?.webhook?.hasSecret).toBe(true);
  });

  test("receipt finds it by the token's hash; an sdk source is never found", async ({ server }) => {
    const source = await createStripeSource(server, "lookup");
    const found = await selectHookSourceByTokenHash(server.pool, sha256(source.hookToken));
    expect(found?.id).toBe(source.id);
    expect(hookSettingsFromStored(found?.webhook).secret).toBe(stripeSecret);
    expect(await selectHookSourceByTokenHash(server.pool, sha256("not-a-token"))).toBeUndefined();
  });

  test("an sdk source is the default, has no webhook and no token", async ({ server }) => {
    const { source } = await server.sources.createSource({ source: { name: "web" } });
    expect(source?.kind).toBe(SourceKind.SDK);
    expect(source?.webhook).toBeUndefined();
    expect(source?.hookToken).toBe("");
    const error = await failure(
      server.sources.createSource({ source: { name: "web", kind: SourceKind.SDK, webhook: { verifier: HookVerifier.NONE } } }),
    );
    expect(error.rawMessage).toBe("source.webhook: only with kind SOURCE_KIND_WEBHOOK");
  });

  test("a webhook source without settings takes anything (verifier none)", async ({ server }) => {
    const { source } = await server.sources.createSource({ source: { name: "open", kind: SourceKind.WEBHOOK } });
    expect(source?.webhook).toMatchObject({ verifier: HookVerifier.NONE, hasSecret: false });
  });

  test.for<[MessageInitShape<typeof WebhookSourceSchema>, string]>([
    [{ verifier: HookVerifier.GITHUB }, "source.webhook.secret: is required with verifier github"],
    [{ verifier: HookVerifier.STANDARD_WEBHOOKS, secret: "nope" }, "source.webhook.secret: must be whsec_ followed by base64"],
    [{ verifier: HookVerifier.BASIC, secret: "useronly" }, "source.webhook.secret: must be user:password (both non-empty)"],
    [
      { verifier: HookVerifier.HMAC, secret: "k", hmac: { header: "X-Sig", algorithm: "md5" } },
      "source.webhook.hmac.algorithm: must be sha1, sha256 or sha512",
    ],
    [{ verifier: HookVerifier.NONE, response: { status: 500 } }, "source.webhook.response.status: must be 200 to 299"],
    [{ verifier: HookVerifier.NONE, transform: "function transform(request) { return [" }, "source.webhook.transform: "],
    [{ verifier: HookVerifier.NONE, idempotencyKey: "$" }, "source.webhook.idempotency_key: "],
  ])("refused, naming the field: %j", async ([webhook, message], { server }) => {
    const error = await failure(server.sources.createSource({ source: { name: "bad", kind: SourceKind.WEBHOOK, webhook } }));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage.startsWith(message)).toBe(true);
  });

  test("a transform's syntax error is named with its line", async ({ server }) => {
    const error = await failure(
      server.sources.createSource({
        source: { name: "bad", kind: SourceKind.WEBHOOK, webhook: { transform: "function transform(request) {\n  return [;\n}" } },
      }),
    );
    expect(error.rawMessage).toMatch(/^source\.webhook\.transform: .*line 2/i);
  });
});

describe("updating a webhook source", () => {
  test("name and webhook with a mask; an empty secret keeps the stored one", async ({ server }) => {
    const source = await createStripeSource(server, "before");
    const { source: updated } = await server.sources.updateSource({
      source: { id: source.id, name: "after", webhook: { verifier: HookVerifier.STRIPE, idempotencyKey: "$.data.object.id" } },
      updateMask: { paths: ["name", "webhook"] },
    });
    expect(updated?.name).toBe("after");
    expect(updated?.webhook).toMatchObject({
      verifier: HookVerifier.STRIPE,
      hasSecret: true,
      idempotencyKey: "$.data.object.id",
      transform: "",
    });
    expect((await storedRow(server, source.id)).webhook.secret).toBe(stripeSecret);
    // The token survives an update.
    expect((await selectHookSourceByTokenHash(server.pool, sha256(source.hookToken)))?.id).toBe(source.id);
  });

  test("one webhook field by its path leaves the others", async ({ server }) => {
    const source = await createStripeSource(server);
    await server.sources.updateSource({
      source: { id: source.id, webhook: { maxRequestsPerSecond: 50 } },
      updateMask: { paths: ["webhook.max_requests_per_second"] },
    });
    const row = await storedRow(server, source.id);
    expect(row.webhook).toMatchObject({ verifier: "stripe", secret: stripeSecret, maxRequestsPerSecond: 50 });
    expect(row.webhook.transform).toContain("function transform");
  });

  test("over Connect JSON: the mask is a comma-separated string of camelCase paths", async ({ server }) => {
    const source = await createStripeSource(server);
    const response = await fetch(`${server.url}/waypost.v1.SourceService/UpdateSource`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${server.adminToken}` },
      body: JSON.stringify({
        source: { id: source.id, name: "json", webhook: { maxRequestsPerSecond: 7, secret: "ignored" } },
        updateMask: "name,webhook.maxRequestsPerSecond",
      }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { source: { name: string; kind: string; webhook: Record<string, unknown> } };
    expect(body.source).toMatchObject({ name: "json", kind: "SOURCE_KIND_WEBHOOK" });
    expect(body.source.webhook).toMatchObject({ verifier: "HOOK_VERIFIER_STRIPE", hasSecret: true, maxRequestsPerSecond: 7 });
    expect(body.source.webhook.secret).toBeUndefined();
    expect((await storedRow(server, source.id)).webhook.secret).toBe(stripeSecret);
  });

  test("a new secret replaces the stored one; another verifier needs its own secret", async ({ server }) => {
    const source = await createStripeSource(server);
    await server.sources.updateSource({
      source: { id: source.id, webhook: { verifier: HookVerifier.STRIPE, secret: "whsec_new" } },
      updateMask: { paths: ["webhook"] },
    });
    expect((await storedRow(server, source.id)).webhook.secret).toBe("whsec_new");
    const error = await failure(
      server.sources.updateSource({
        source: { id: source.id, webhook: { verifier: HookVerifier.GITHUB } },
        updateMask: { paths: ["webhook"] },
      }),
    );
    expect(error.rawMessage).toBe("source.webhook.secret: is required with verifier github");
    await server.sources.updateSource({ source: { id: source.id, webhook: { verifier: HookVerifier.NONE } } });
    expect((await storedRow(server, source.id)).webhook).toMatchObject({ verifier: "none", secret: "" });
  });

  test("kind cannot change; an sdk source has no webhook settings", async ({ server }) => {
    const hook = await createStripeSource(server);
    const kind = await failure(server.sources.updateSource({ source: { id: hook.id, name: "x", kind: SourceKind.SDK } }));
    expect(kind.rawMessage).toBe("source.kind: cannot change: create a new source");
    const masked = await failure(server.sources.updateSource({ source: { id: hook.id }, updateMask: { paths: ["kind"] } }));
    expect(masked.code).toBe(Code.InvalidArgument);
    const sdk = await server.createSource();
    const error = await failure(
      server.sources.updateSource({ source: { id: sdk.id, webhook: { verifier: HookVerifier.NONE } }, updateMask: { paths: ["webhook"] } }),
    );
    expect(error.rawMessage).toBe("source.webhook: only a webhook source has webhook settings");
    const { source: renamed } = await server.sources.updateSource({ source: { id: sdk.id, name: "renamed" } });
    expect(renamed).toMatchObject({ name: "renamed", kind: SourceKind.SDK });
  });

  test("unknown source, unknown mask path", async ({ server }) => {
    const missing = await failure(server.sources.updateSource({ source: { id: "3f1c5c3e-4f51-4c8e-9f57-8f3c1d2b7a10", name: "x" } }));
    expect(missing.code).toBe(Code.NotFound);
    const source = await createStripeSource(server);
    const path = await failure(server.sources.updateSource({ source: { id: source.id }, updateMask: { paths: ["webhook.nope"] } }));
    expect(path.rawMessage).toMatch(/^updateMask: cannot update "webhook.nope"/);
  });
});

describe("rotating the inbound URL token", () => {
  test("the new token is shown once; the old one stops at once", async ({ server }) => {
    const source = await createStripeSource(server);
    const { source: rotated } = await server.sources.rotateHookToken({ id: source.id });
    expect(rotated?.hookToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(rotated?.hookToken).not.toBe(source.hookToken);
    expect(rotated?.writeKey).toBe("");
    expect(await selectHookSourceByTokenHash(server.pool, sha256(source.hookToken))).toBeUndefined();
    expect((await selectHookSourceByTokenHash(server.pool, sha256(rotated!.hookToken)))?.id).toBe(source.id);
    expect((await server.sources.getSource({ id: source.id })).source?.hookToken).toBe("");
  });

  test("an sdk source has no token to rotate; an unknown one is not found", async ({ server }) => {
    const sdk = await server.createSource();
    expect((await failure(server.sources.rotateHookToken({ id: sdk.id }))).code).toBe(Code.FailedPrecondition);
    expect((await failure(server.sources.rotateHookToken({ id: "3f1c5c3e-4f51-4c8e-9f57-8f3c1d2b7a10" }))).code).toBe(Code.NotFound);
  });
});
