import { PassThrough } from "node:stream";
import { toJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect } from "vitest";
import { ListDestinationsResponseSchema } from "../../gen/waypost/v1/destination_pb.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";

let logs = "";
const logStream = new PassThrough().on("data", (chunk: Buffer) => (logs += chunk.toString()));
const test = testWith({ server: { logStream } });

async function adminCall(server: TestServer, service: string, method: string, body: unknown, authorization?: string) {
  const response = await fetch(`${server.url}/waypost.v1.${service}/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(authorization === undefined ? {} : { authorization }) },
    body: JSON.stringify(body),
  });
  return (await response.json()) as Record<string, unknown>;
}

async function failure(promise: Promise<unknown>): Promise<ConnectError> {
  const error = await promise.then(
    () => undefined,
    (e) => ConnectError.from(e),
  );
  if (!error) throw new Error("expected the call to fail");
  return error;
}

describe("admin authentication", () => {
  test("no token, a wrong token and a write key are all unauthenticated", async ({ server }) => {
    const source = await server.createSource();
    expect((await adminCall(server, "SourceService", "ListSources", {})).code).toBe("unauthenticated");
    expect((await adminCall(server, "SourceService", "ListSources", {}, "Bearer not-the-token")).code).toBe("unauthenticated");
    expect((await adminCall(server, "SourceService", "ListSources", {}, `Bearer ${source.writeKey}`)).code).toBe("unauthenticated");
    const basic = `Basic ${Buffer.from(`${source.writeKey}:`).toString("base64")}`;
    expect((await adminCall(server, "DestinationService", "ListDestinations", {}, basic)).code).toBe("unauthenticated");
    expect(
      ((await adminCall(server, "SourceService", "ListSources", {}, `Bearer ${server.adminToken}`)).sources as Array<{ id: string }>).map(
        (s) => s.id,
      ),
    ).toContain(source.id);
  });
});

describe("sources", () => {
  test("create returns the write key once; get and list never do", async ({ server }) => {
    const created = await server.sources.createSource({ source: { name: "web" } });
    expect(created.source?.writeKey).toMatch(/^wk_/);
    const got = await server.sources.getSource({ id: created.source!.id });
    expect(got.source?.writeKey).toBe("");
    expect(got.source?.name).toBe("web");
    const stored = await server.pool.query("SELECT * FROM sources WHERE id = $1", [created.source!.id]);
    expect(JSON.stringify(stored.rows[0])).not.toContain(created.source!.writeKey);
  });

  test("rotating the write key retires the old one", async ({ server }) => {
    const source = await server.createSource();
    const { source: rotated } = await server.sources.rotateWriteKey({ id: source.id });
    const old = await failure(server.tracking(source.writeKey).track({ track: { userId: "u", event: "E" } }));
    expect(old.code).toBe(Code.Unauthenticated);
    const ok = await server.tracking(rotated!.writeKey).track({ track: { userId: "u", event: "E" } });
    expect(ok.messageId).not.toBe("");
  });

  test("list pages with pageSize and pageToken", async ({ server }) => {
    for (let i = 0; i < 5; i++) await server.createSource(`page-${i}`);
    const seen: string[] = [];
    let pageToken = "";
    do {
      const page = await server.sources.listSources({ pageSize: 2, pageToken });
      expect(page.sources.length).toBeLessThanOrEqual(2);
      seen.push(...page.sources.map((s) => s.id));
      pageToken = page.nextPageToken;
    } while (pageToken);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.length).toBeGreaterThanOrEqual(5);
    const bad = await failure(server.sources.listSources({ pageToken: "garbage!" }));
    expect(bad.code).toBe(Code.InvalidArgument);
  });

  test("unknown and malformed ids", async ({ server }) => {
    expect((await failure(server.sources.getSource({ id: "3f1c5c3e-4f51-4c8e-9f57-8f3c1d2b7a10" }))).code).toBe(Code.NotFound);
    const malformed = await failure(server.sources.getSource({ id: "1; DROP TABLE sources" }));
    expect(malformed.code).toBe(Code.InvalidArgument);
    expect(malformed.rawMessage).toContain("id");
  });

  test("deleting a source stops its write key", async ({ server }) => {
    const source = await server.createSource();
    await server.sources.deleteSource({ id: source.id });
    const error = await failure(server.tracking(source.writeKey).track({ track: { userId: "u", event: "E" } }));
    expect(error.code).toBe(Code.Unauthenticated);
  });
});

describe("destination validation names the field", () => {
  const hook = (i: number) => ({ url: `https://example.com/hook/${i}` });

  async function invalid(server: TestServer, destination: Record<string, unknown>, field: string) {
    const error = await failure(server.destinations.createDestination({ destination: destination as never }));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain(field);
    return error;
  }

  test("six webhooks", async ({ server }) => {
    await invalid(server, { name: "d", webhooks: [0, 1, 2, 3, 4, 5].map(hook) }, "destination.webhooks");
  });

  test("no webhook", async ({ server }) => {
    await invalid(server, { name: "d", webhooks: [] }, "destination.webhooks");
  });

  test("six headers", async ({ server }) => {
    const headers = Object.fromEntries([1, 2, 3, 4, 5, 6].map((i) => [`X-H${i}`, "v"]));
    await invalid(server, { name: "d", webhooks: [{ url: "https://example.com", headers }] }, "destination.webhooks[0].headers");
  });

  test("reserved headers, in any case", async ({ server }) => {
    for (const name of ["User-Agent", "content-type", "X-Signature", "Content-Length", "host", "Transfer-Encoding", "CONNECTION"]) {
      await invalid(server, { name: "d", webhooks: [{ url: "https://example.com", headers: { [name]: "x" } }] }, name);
    }
  });

  test("header values cannot smuggle new lines", async ({ server }) => {
    await invalid(server, { name: "d", webhooks: [{ url: "https://example.com", headers: { "X-A": "a\r\nX-B: b" } }] }, "X-A");
  });

  test("non-http URLs, relative URLs", async ({ server }) => {
    await invalid(server, { name: "d", webhooks: [{ url: "ftp://example.com/x" }] }, "destination.webhooks[0].url");
    await invalid(server, { name: "d", webhooks: [hook(0), { url: "/relative" }] }, "destination.webhooks[1].url");
    await invalid(server, { name: "d", webhooks: [{ url: "javascript:alert(1)" }] }, "destination.webhooks[0].url");
  });

  test("unknown source", async ({ server }) => {
    await invalid(server, { name: "d", sourceIds: ["3f1c5c3e-4f51-4c8e-9f57-8f3c1d2b7a10"], webhooks: [hook(0)] }, "destination.sourceIds");
  });

  test("missing name", async ({ server }) => {
    await invalid(server, { webhooks: [hook(0)] }, "destination.name");
  });
});

describe("destinations", () => {
  test("the shared secret is write-only, and never logged", async ({ server }) => {
    const secret = "s3cret-value-that-must-not-leak";
    const source = await server.createSource();
    const created = await server.createDestination({
      name: "signed",
      sourceIds: [source.id],
      webhooks: [{ url: "https://example.com/a", headers: { "X-Team": "a" } }],
      sharedSecret: secret,
    });
    expect(created.hasSharedSecret).toBe(true);
    expect(created.sharedSecret).toBe("");
    expect(created.enabled).toBe(true);
    const listed = await server.destinations.listDestinations({});
    expect(toJsonString(ListDestinationsResponseSchema, listed)).not.toContain(secret);
    const raw = await adminCall(server, "DestinationService", "GetDestination", { id: created.id }, `Bearer ${server.adminToken}`);
    expect(JSON.stringify(raw)).not.toContain(secret);
    await server.tracking(source.writeKey).track({ track: { userId: "u", event: "E" } });
    expect(logs.length).toBeGreaterThan(0);
    expect(logs).not.toContain(secret);
    expect(logs).not.toContain(source.writeKey);
    expect(logs).not.toContain(server.adminToken);
  });

  test("update with a field mask changes only those fields", async ({ server }) => {
    const created = await server.createDestination({ name: "masked", webhooks: [{ url: "https://example.com/a" }], sharedSecret: "x" });
    const { destination } = await server.destinations.updateDestination({
      destination: { id: created.id, enabled: false, name: "ignored", webhooks: [{ url: "https://example.com/b" }] },
      updateMask: { paths: ["enabled", "webhooks"] },
    });
    expect(destination?.enabled).toBe(false);
    expect(destination?.name).toBe("masked");
    expect(destination?.webhooks.map((w) => w.url)).toEqual(["https://example.com/b"]);
    expect(destination?.hasSharedSecret).toBe(true);
    const cleared = await server.destinations.updateDestination({
      destination: { id: created.id, sharedSecret: "" },
      updateMask: { paths: ["shared_secret"] },
    });
    expect(cleared.destination?.hasSharedSecret).toBe(false);
    const badMask = await failure(
      server.destinations.updateDestination({ destination: { id: created.id }, updateMask: { paths: ["id"] } }),
    );
    expect(badMask.code).toBe(Code.InvalidArgument);
    expect(badMask.rawMessage).toContain("updateMask");
  });

  test("the JSON field mask form (a comma-separated string) works", async ({ server }) => {
    const created = await server.createDestination({ name: "json", webhooks: [{ url: "https://example.com/a" }] });
    const result = await adminCall(
      server,
      "DestinationService",
      "UpdateDestination",
      { destination: { id: created.id, enabled: false, webhooks: [{ url: "https://example.com/c" }] }, updateMask: "enabled,webhooks" },
      `Bearer ${server.adminToken}`,
    );
    expect(result.destination).toMatchObject({ enabled: false, webhooks: [{ url: "https://example.com/c" }] });
  });

  test("a stale etag is refused: concurrent edits are detected", async ({ server }) => {
    const created = await server.createDestination({ name: "etag", webhooks: [{ url: "https://example.com/a" }] });
    await server.destinations.updateDestination({
      destination: { id: created.id, name: "first", etag: created.etag },
      updateMask: { paths: ["name"] },
    });
    const conflict = await failure(
      server.destinations.updateDestination({
        destination: { id: created.id, name: "second", etag: created.etag },
        updateMask: { paths: ["name"] },
      }),
    );
    expect(conflict.code).toBe(Code.Aborted);
    expect((await server.destinations.getDestination({ id: created.id })).destination?.name).toBe("first");
  });

  test("concurrent updates without etags are serialised, none lost", async ({ server }) => {
    const created = await server.createDestination({ name: "race", webhooks: [{ url: "https://example.com/a" }] });
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        server.destinations.updateDestination({ destination: { id: created.id, name: `n${i}` }, updateMask: { paths: ["name"] } }),
      ),
    );
    const { destination } = await server.destinations.getDestination({ id: created.id });
    expect(destination?.etag).toBe("r11");
  });
});
