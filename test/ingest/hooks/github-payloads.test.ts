import { sign as githubSign } from "@octokit/webhooks-methods";
import { describe, expect } from "vitest";
import { HookRequestStatus, HookService } from "../../../gen/waypost/v1/hook_pb.js";
import { HookVerifier, SourceKind } from "../../../gen/waypost/v1/source_pb.js";
import { createClient, type Client } from "@connectrpc/connect";
import { postHook } from "../../helpers/hook-sources.js";
import { testWith } from "../../helpers/fixtures.js";
import type { TestServer } from "../../helpers/server.js";
import type { Receiver } from "../../helpers/receiver.js";
import { testAdminToken } from "../../helpers/server.js";

// GitHub's webhooks under the default mapping, the whole way: signed by
// @octokit/webhooks-methods, POSTed as JSON and as GitHub's form encoding
// (`payload=<JSON>`, signed over the encoded bytes), each delivered once to
// a webhook destination with the payload as its properties, including a
// `push` of many commits whose JSON is well over the 32 KB of an SDK call.
let hooks: Client<typeof HookService>;
const secret = "gh-webhook-secret";
const admin = { headers: { authorization: `Bearer ${testAdminToken}` } };

const test = testWith();
test.beforeAll(async ({ server }) => {
  hooks = createClient(HookService, server.transport);
});

/** A `push` event as GitHub sends it, with `commits` commits (about 900 bytes each). */
function pushEvent(commits: number): Record<string, unknown> {
  const user = { name: "Octo Cat", email: "octocat@example.com", username: "octocat" };
  const repository = {
    id: 1296269,
    node_id: "MDEwOlJlcG9zaXRvcnkxMjk2MjY5",
    name: "Hello-World",
    full_name: "octocat/Hello-World",
    private: false,
    owner: { login: "octocat", id: 1, type: "User", html_url: "https://github.com/octocat" },
    html_url: "https://github.com/octocat/Hello-World",
    description: "This your first repo! Ünïcødé & <markup>",
    default_branch: "main",
  };
  return {
    ref: "refs/heads/main",
    before: "6113728f27ae82c7b1a177c8d03f9e96e0adf246",
    after: "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",
    created: false,
    deleted: false,
    forced: false,
    compare: "https://github.com/octocat/Hello-World/compare/6113728f27ae...0d1a26e67d8f",
    commits: Array.from({ length: commits }, (_, i) => ({
      id: `${i.toString(16).padStart(8, "0")}7d8f5eaf1f6ba5c57fc3c7d91ac0fd1c`,
      tree_id: `${i.toString(16).padStart(8, "0")}f27ae82c7b1a177c8d03f9e96e0adf2`,
      distinct: true,
      message: `Fix the thing number ${i} (#${1000 + i})\n\nIt was broken in a way that needed a longer explanation, with "quotes" & ampersands = signs + pluses.`,
      timestamp: "2026-12-06T21:00:00+01:00",
      url: `https://github.com/octocat/Hello-World/commit/${i.toString(16).padStart(8, "0")}7d8f5eaf1f6ba5c57fc3c7d91ac0fd1c`,
      author: user,
      committer: user,
      added: [`src/feature-${i}.ts`],
      removed: [],
      modified: ["README.md", `src/module-${i}/index.ts`, `test/module-${i}.test.ts`],
    })),
    head_commit: null,
    repository,
    pusher: { name: "octocat", email: "octocat@example.com" },
    sender: repository.owner,
  };
}

async function githubSource(server: TestServer, receiver: Receiver, name: string): Promise<{ id: string; url: string }> {
  const { source } = await server.sources.createSource({
    source: { name, kind: SourceKind.WEBHOOK, webhook: { verifier: HookVerifier.GITHUB, secret } },
  });
  await server.createDestination({ name: `${name} sink`, sourceIds: [source!.id], webhooks: [{ url: new URL(name, receiver.url).href }] });
  return { id: source!.id, url: `${server.url}/hooks/${source!.hookToken}` };
}

/** Posts the event as GitHub does, signed over the bytes sent; returns the answer's status. */
async function deliver(url: string, event: unknown, encoding: "json" | "form", delivery: string): Promise<number> {
  const json = JSON.stringify(event);
  const body = encoding === "json" ? json : new URLSearchParams({ payload: json }).toString();
  const answer = await postHook(url, body, {
    "content-type": encoding === "json" ? "application/json" : "application/x-www-form-urlencoded",
    "x-github-event": "push",
    "x-github-delivery": delivery,
    "x-hub-signature-256": await githubSign(secret, body),
  });
  return answer.status;
}

describe("GitHub deliveries under the default mapping", () => {
  test.for([
    ["json", 8],
    ["form", 8],
    // About 28 KB of JSON: under 32 KB as JSON, over it once form-encoded.
    ["form", 30],
    ["json", 70],
    ["form", 70],
  ] as const)("a %s push of %i commits arrives once, the payload as its properties", async ([encoding, commits], { server, receiver }) => {
    const name = `${encoding}-${commits}`;
    const source = await githubSource(server, receiver, name);
    const event = pushEvent(commits);
    if (commits === 70) expect(JSON.stringify(event).length).toBeGreaterThan(40 * 1024);
    expect(await deliver(source.url, event, encoding, `delivery-${name}`)).toBe(200);
    // A resend of the same delivery is acknowledged and not processed again.
    expect(await deliver(source.url, event, encoding, `delivery-${name}`)).toBe(200);
    await server.waypost.hooks!.idle();

    const listed = await hooks.listHookRequests({ sourceId: source.id }, admin);
    expect(listed.requests.map((r) => [r.status, r.error])).toEqual([
      [HookRequestStatus.DUPLICATE, ""],
      [HookRequestStatus.PROCESSED, ""],
    ]);
    const arrived = await waitForPath(receiver, new URL(name, receiver.url).pathname);
    const call = JSON.parse(arrived.body) as { type: string; event: string; anonymousId: string; properties: unknown };
    expect(call).toMatchObject({ type: "track", event: "push", anonymousId: `delivery-${name}` });
    expect(call.properties).toEqual(event);
    expect(receiver.requests.filter((r) => r.path === new URL(name, receiver.url).pathname)).toHaveLength(1);
  });
});

async function waitForPath(receiver: Receiver, path: string) {
  for (let count = 1; ; count++) {
    const requests = await receiver.waitForRequests(count);
    const found = requests.find((r) => r.path === path);
    if (found) return found;
  }
}
