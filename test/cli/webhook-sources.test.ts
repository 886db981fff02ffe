import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "vitest";
import { HookVerifier, SourceKind } from "../../gen/waypost/v1/source_pb.js";
import { hookRequestState, insertHookRequest } from "../helpers/hook-requests.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";
import { cliEnv, waypost, waypostJson } from "./support.js";

// `waypost sources create --webhook`, `sources rotate-hook-token` and
// `waypost hooks list|reprocess|test` against a real Waypost.

let env: NodeJS.ProcessEnv;
let dir: string;

const test = testWith();
test.beforeAll(async ({ server }) => {
  env = cliEnv(server);
  dir = mkdtempSync(path.join(tmpdir(), "waypost-hooks-cli-"));
});

function file(name: string, text: string): string {
  const at = path.join(dir, name);
  writeFileSync(at, text);
  return at;
}

async function tokenHash(server: TestServer, sourceId: string): Promise<string> {
  const result = await server.pool.query<{ hash: Buffer }>("SELECT hook_token_hash AS hash FROM sources WHERE id = $1", [sourceId]);
  return result.rows[0]!.hash.toString("hex");
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** Wakes the processor and waits until it has nothing left to do. */
async function processed(server: TestServer, sourceId: string): Promise<void> {
  server.waypost.hooks!.wake(sourceId);
  await server.waypost.hooks!.idle();
}

test("usage errors exit 2 and name the flag", async ({ server }) => {
  const secret = file("secret-usage", "whsec_x\n");
  const results = await Promise.all([
    waypost(["sources", "create"], env),
    waypost(["sources", "create", "pay", "--verifier", "stripe"], env),
    waypost(["sources", "create", "pay", "--webhook", "--verifier", "paypal"], env),
    waypost(["sources", "create", "pay", "--webhook", "--verifier", "stripe", "--secret-file", path.join(dir, "missing")], env),
    waypost(["sources", "create", "pay", "--webhook", "--verifier", "stripe", "--hmac-header", "X-S", "--secret-file", secret], env),
    waypost(["hooks", "list", "00000000-0000-4000-8000-000000000001", "--status", "lost"], env),
    waypost(["hooks", "reprocess", "00000000-0000-4000-8000-000000000001", "--id", "1", "--since", "1h"], env),
    waypost(["hooks", "test", "00000000-0000-4000-8000-000000000001", "--transform-file", path.join(dir, "missing.js")], env),
    waypost(["sources", "update", "00000000-0000-4000-8000-000000000001"], env),
    waypost(["sources", "update", "00000000-0000-4000-8000-000000000001", "--verifier", "paypal"], env),
  ]);
  expect(results[8]!.stderr).toContain("nothing to change: give --name, --verifier, --secret-file, --transform-file");
  expect(results[9]!.stderr).toContain('--verifier: unknown verifier "paypal"');
  for (const result of results) expect(result.code, result.stderr).toBe(2);
  expect(results[0]!.stderr).toContain("--name");
  expect(results[1]!.stderr).toContain("--verifier: only with --webhook");
  expect(results[2]!.stderr).toContain('--verifier: unknown verifier "paypal"');
  expect(results[3]!.stderr).toContain("--secret-file: cannot read");
  expect(results[4]!.stderr).toContain("--hmac-*: only with --verifier hmac");
  expect(results[5]!.stderr).toContain('--status: unknown status "lost"');
  expect(results[6]!.stderr).toContain("--id: give either request ids or a time range");
  expect(results[7]!.stderr).toContain("--transform-file: cannot read");
  // Nothing was created by a refused command.
  expect((await server.sources.listSources({})).sources).toEqual([]);
});

test("sources create NAME --webhook prints the inbound URL once; rotate-hook-token replaces it", async ({ server }) => {
  const transform = "function transform(request) { return [{ type: 'track', userId: 'u', event: request.body.type }]; }\n";
  const created = await waypost(
    [
      "sources",
      "create",
      "payments",
      "--webhook",
      "--verifier",
      "stripe",
      "--secret-file",
      file("stripe-secret", "whsec_c2VjcmV0c2VjcmV0c2VjcmV0\n"),
      "--transform-file",
      file("stripe.js", transform),
      "--idempotency-key",
      "$.id",
    ],
    env,
  );
  expect(created.code, created.stderr).toBe(0);
  const url = /^inbound url:\s+(\S+)\s+\(shown once/m.exec(created.stdout)?.[1];
  expect(url).toMatch(new RegExp(`^${server.url}/hooks/[A-Za-z0-9_-]{43}$`));
  expect(created.stdout).toMatch(/^verifier:\s+stripe$/m);
  expect(created.stdout).not.toContain("write key");
  const id = /^id:\s+(\S+)$/m.exec(created.stdout)![1]!;
  // The URL's token is the one the server keeps (as its hash).
  const token = url!.split("/hooks/")[1]!;
  expect(await tokenHash(server, id)).toBe(sha256(token));

  const { source } = await server.sources.getSource({ id });
  expect(source).toMatchObject({
    name: "payments",
    kind: SourceKind.WEBHOOK,
    hookToken: "",
    webhook: { verifier: HookVerifier.STRIPE, secret: "", hasSecret: true, transform, idempotencyKey: "$.id" },
  });

  const list = await waypost(["sources", "list"], env);
  expect(list.stdout).toMatch(new RegExp(`^${id}\\s+payments\\s+webhook\\s`, "m"));

  const rotated = await waypost(["sources", "rotate-hook-token", "payments"], env);
  expect(rotated.code, rotated.stderr).toBe(0);
  const newUrl = /^inbound url:\s+(\S+)\s+\(shown once/m.exec(rotated.stdout)?.[1];
  expect(newUrl).toMatch(new RegExp(`^${server.url}/hooks/`));
  expect(newUrl).not.toBe(url);
  expect(await tokenHash(server, id)).toBe(sha256(newUrl!.split("/hooks/")[1]!));

  // --json carries the token too (a script keeps it).
  const json = await waypostJson<{ source: { hookToken: string; kind: string } }>(
    ["sources", "create", "gh", "--webhook", "--verifier", "none"],
    env,
  );
  expect(json.source.kind).toBe("SOURCE_KIND_WEBHOOK");
  expect(json.source.hookToken).toMatch(/^[A-Za-z0-9_-]{43}$/);

  // The HMAC and token options, and the rate limit, reach the stored settings.
  const hmac = await waypostJson<{ source: { id: string } }>(
    [
      "sources",
      "create",
      "crm",
      "--webhook",
      "--verifier",
      "hmac",
      "--secret-file",
      file("hmac-secret", "k3y"),
      "--hmac-header",
      "X-Crm-Signature",
      "--hmac-algorithm",
      "sha512",
      "--hmac-encoding",
      "base64",
      "--hmac-prefix",
      "sha512=",
      "--max-requests-per-second",
      "50",
    ],
    env,
  );
  expect((await server.sources.getSource({ id: hmac.source.id })).source?.webhook).toMatchObject({
    verifier: HookVerifier.HMAC,
    hasSecret: true,
    hmac: { header: "X-Crm-Signature", algorithm: "sha512", encoding: "base64", prefix: "sha512=" },
    maxRequestsPerSecond: 50,
  });
  const tokenSource = await waypostJson<{ source: { id: string } }>(
    [
      "sources",
      "create",
      "forms",
      "--webhook",
      "--verifier",
      "token",
      "--secret-file",
      file("token", "t0k"),
      "--token-header",
      "X-Form-Token",
    ],
    env,
  );
  expect((await server.sources.getSource({ id: tokenSource.source.id })).source?.webhook).toMatchObject({
    verifier: HookVerifier.TOKEN,
    tokenHeader: "X-Form-Token",
  });
  // A setting the server refuses: exit 1 with its message naming the field.
  const refused = await waypost(["sources", "create", "bad", "--webhook", "--verifier", "hmac", "--secret-file", file("k", "k")], env);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/^waypost: invalid_argument: source\.webhook\.hmac\.header: /);

  // An SDK source as before, with the name as an argument.
  const sdk = await waypost(["sources", "create", "web"], env);
  expect(sdk.stdout).toMatch(/^write key:\s+wk_/m);
});

test("hooks list, test and reprocess: a failing transform's request is seen, a fix tested, then reprocessed", async ({ server }) => {
  const broken = "function transform(request) { return [{ type: 'track', userId: request.body.customer.id, event: 'Paid' }]; }";
  const json = await waypostJson<{ source: { id: string } }>(
    ["sources", "create", "shop", "--webhook", "--transform-file", file("broken.js", broken)],
    env,
  );
  const sourceId = json.source.id;
  const good = await insertHookRequest(server.pool, sourceId, { body: { customer: { id: "c1" } } });
  const bad = await insertHookRequest(server.pool, sourceId, { body: { user: "u9" } });
  await processed(server, sourceId);
  expect((await hookRequestState(server.pool, bad)).status).toBe("failed");

  const failed = await waypost(["hooks", "list", "shop", "--status", "failed"], env);
  expect(failed.code, failed.stderr).toBe(0);
  expect(failed.stdout).toMatch(new RegExp(`^${bad}\\s+\\S+\\s+failed\\s+-\\s+transform: TypeError: .*'id' of undefined`, "m"));
  expect(failed.stdout).not.toMatch(new RegExp(`^${good}\\s`, "m"));
  const all = await waypostJson<{ requests: Array<{ id: string; status: string; messageIds?: string[] }> }>(
    ["hooks", "list", sourceId],
    env,
  );
  expect(all.requests.map((r) => [r.id, r.status])).toEqual([
    [bad, "HOOK_REQUEST_STATUS_FAILED"],
    [good, "HOOK_REQUEST_STATUS_PROCESSED"],
  ]);
  expect(all.requests[1]!.messageIds).toEqual([`hook-${good}-0`]);

  // The fix, tried on the stored requests: nothing stored or changed.
  const fixed =
    "function transform(request) { var b = request.body; return [{ type: 'track', userId: b.customer ? b.customer.id : b.user, event: 'Paid' }]; }";
  const fixFile = file("fixed.js", fixed);
  const tested = await waypost(["hooks", "test", "shop", "--transform-file", fixFile], env);
  expect(tested.code, tested.stderr).toBe(0);
  expect(tested.stdout).toMatch(new RegExp(`^${bad}\\s+track\\s+hook-${bad}-0\\s+.*"userId":"u9"`, "m"));
  expect(tested.stdout).toMatch(new RegExp(`^${good}\\s+track\\s+hook-${good}-0\\s+.*"userId":"c1"`, "m"));
  const storedTest = await waypost(["hooks", "test", "shop", "--id", bad], env);
  expect(storedTest.stdout).toMatch(new RegExp(`^${bad}\\s+error\\s+-\\s+transform: `, "m"));
  expect((await hookRequestState(server.pool, bad)).status).toBe("failed");

  // Saved, then every failed request run again: the failed one makes its call once.
  const secretBefore = await server.pool.query("SELECT webhook FROM sources WHERE id = $1", [sourceId]);
  const saved = await waypost(["sources", "update", "shop", "--transform-file", fixFile], env);
  expect(saved.code, saved.stderr).toBe(0);
  expect(saved.stdout).toMatch(new RegExp(`^transform:\\s+${fixed.length} characters$`, "m"));
  const stored = await server.sources.getSource({ id: sourceId });
  expect(stored.source?.webhook?.transform).toBe(fixed);
  // Only the transform changed.
  const after = await server.pool.query("SELECT webhook FROM sources WHERE id = $1", [sourceId]);
  expect({ ...after.rows[0].webhook, transform: undefined }).toEqual({ ...secretBefore.rows[0].webhook, transform: undefined });
  const again = await waypost(["hooks", "reprocess", "shop"], env);
  expect(again.code, again.stderr).toBe(0);
  // It waits for the run and says what it made: the fixed request's call is new.
  expect(again.stdout.trim()).toBe("1 request set to run again: 1 call new, 0 already stored (not stored twice)");
  await processed(server, sourceId);
  expect(await hookRequestState(server.pool, bad)).toMatchObject({ status: "processed", message_ids: [`hook-${bad}-0`] });
  const byId = await waypost(["hooks", "reprocess", sourceId, "--id", good], env);
  // A processed request run again: its call was stored before.
  expect(byId.stdout.trim()).toBe("1 request set to run again: 0 calls new, 1 already stored (not stored twice)");
  const detached = await waypost(["hooks", "reprocess", sourceId, "--id", good, "--detach"], env);
  expect(detached.stdout.trim()).toBe("1 request set to run again");
  await processed(server, sourceId);
  const calls = await server.pool.query("SELECT message_id FROM messages WHERE source_id = $1 ORDER BY message_id", [sourceId]);
  expect(calls.rows.map((r) => r.message_id)).toEqual([`hook-${bad}-0`, `hook-${good}-0`].sort());
});
