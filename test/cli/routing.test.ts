import { writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import { cliEnv, waypost, waypostJson } from "./support.js";

interface BackfillJson {
  id: string;
  state: string;
  candidates?: string;
  created?: string;
  filtered?: string;
}

/** Routing rules through `waypost`: the flags, `destinations test` and `backfill`, and `messages explain`. */
let env: NodeJS.ProcessEnv;

const test = testWith();
test.beforeAll(async ({ server }) => {
  env = cliEnv(server);
});

let id = "";
let sourceId = "";
let small = { messageId: "" };
let big = { messageId: "" };

test("--filter, --drop-field and --transform-file set the rules; a bad filter is refused naming the path", async ({ server, receiver }) => {
  const source = await server.createSource("cli routing");
  sourceId = source.id;
  const tracking = server.tracking(source.writeKey);
  small = await tracking.track({ track: { userId: "u", event: "Order Completed", properties: { total: 5 } } });
  big = await tracking.track({ track: { userId: "u", event: "Order Completed", properties: { total: 500, email: "e@x" } } });
  const dir = mkdtempSync(path.join(tmpdir(), "waypost-transform-"));
  const file = path.join(dir, "transform.js");
  writeFileSync(file, "function transform(e) { e.event = 'order'; return e }\n");

  const created = await waypostJson<{ destination: { id: string } }>(
    [
      "destinations",
      "create",
      "--name",
      "crm",
      "--source",
      source.id,
      "--url",
      receiver.url,
      "--disabled",
      "--filter",
      '{"properties.total":{"$gt":100}}',
      "--drop-field",
      "properties.email",
      "--drop-field",
      "context.ip",
      "--transform-file",
      file,
    ],
    env,
  );
  id = created.destination.id;
  const stored = (await server.destinations.getDestination({ id })).destination!;
  expect(stored.filter).toEqual({ "properties.total": { $gt: 100 } });
  expect(stored.dropFields).toEqual(["properties.email", "context.ip"]);
  expect(stored.transform).toContain("e.event = 'order'");

  const [bad, notJson] = await Promise.all([
    waypost(["destinations", "update", id, "--filter", '{"properties.total":{"$gt":"x"}}'], env),
    waypost(["destinations", "update", id, "--filter", "{"], env),
  ]);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toContain("invalid_argument: destination.filter.properties.total.$gt: must be a number");
  expect(notJson.code).toBe(2);
});

test("destinations test shows each call's outcome and body, sending nothing", async ({ receiver }) => {
  const tested = await waypost(["destinations", "test", id, "--sample", "5"], env);
  expect(tested.code, tested.stderr).toBe(0);
  expect(tested.stdout).toMatch(new RegExp(`${small.messageId}\\s+track\\s+Order Completed\\s+filtered`));
  expect(tested.stdout).toMatch(new RegExp(`${big.messageId}\\s+track\\s+Order Completed\\s+send\\s+.*"event":"order"`));
  expect(tested.stdout).not.toContain("e@x");
  expect(receiver.requests).toEqual([]);
});

test("destinations backfill follows the job to its end; messages explain gives each destination's fate", async () => {
  const backfill = await waypost(["destinations", "backfill", "crm", "--since", "1h"], env);
  expect(backfill.code, backfill.stderr).toBe(0);
  // Not a terminal: progress as plain lines, then the backfill as it ended.
  expect(backfill.stdout).toContain(`[${"#".repeat(30)}] 100%  created 1, filtered 1 of 2 candidates\n`);
  expect(backfill.stdout).not.toContain("\r");
  expect(backfill.stdout).toMatch(/^state:\s+done$/m);

  const explained = await waypost(["messages", "explain", big.messageId], env);
  expect(explained.code, explained.stderr).toBe(0);
  expect(explained.stdout).toMatch(new RegExp(`crm\\s+${id}\\s+pending\\s+\\d+\\s+0`));
  const filtered = await waypostJson(["messages", "explain", small.messageId, "--source", sourceId], env);
  expect(filtered.destinations).toEqual([expect.objectContaining({ destinationId: id, fate: "FATE_CREATED_LATER" })]);
  const missing = await waypost(["messages", "explain", "nope"], env);
  expect(missing.code).toBe(1);
  expect(missing.stderr).toContain("not_found");
});

test("destinations backfill --detach returns at once with the job; backfills get --wait, list and cancel", async ({ server }) => {
  const detached = await waypostJson<BackfillJson>(["destinations", "backfill", id, "--since", "1h", "--detach"], env);
  // The call the filter turned away is still without a delivery: the one candidate.
  expect(detached).toMatchObject({ candidates: "1" });
  const waited = await waypost(["backfills", "get", detached.id, "--wait"], env);
  expect(waited.code, waited.stderr).toBe(0);
  expect(waited.stdout).toMatch(/100% {2}created 0, filtered 1 of 1 candidates/);
  const listed = await waypostJson<{ backfills: BackfillJson[] }>(["backfills", "list", "--destination", "crm"], env);
  expect(listed.backfills.map((b) => [b.state, b.created, b.filtered])).toEqual([
    ["JOB_STATE_DONE", undefined, "1"],
    ["JOB_STATE_DONE", "1", "1"],
  ]);
  const ended = await waypostJson<{ backfill: BackfillJson }>(["backfills", "cancel", detached.id], env);
  expect(ended.backfill.state).toBe("JOB_STATE_DONE");
  // A backfill that did not end done: the wait says why and exits 1.
  await server.pool.query("UPDATE background_jobs SET state = 'cancelled', error = 'the destination was deleted' WHERE id = $1", [
    detached.id,
  ]);
  const failed = await waypost(["backfills", "get", detached.id, "--wait"], env);
  expect(failed.code).toBe(1);
  expect(failed.stderr).toBe(`waypost: backfill ${detached.id} cancelled: the destination was deleted\n`);
  expect((await waypost(["backfills", "get", "nope"], env)).stderr).toContain("invalid_argument: id:");
});

test("messages filtered lists the calls a destination's filter turned away, by reason, as a table and as JSON", async ({
  server,
  receiver,
}) => {
  const source = await server.createSource("cli filtered");
  await server.createDestination({
    name: "big orders",
    sourceIds: [source.id],
    webhooks: [{ url: receiver.url }],
    filter: { "properties.total": { $gt: 100 } },
  });
  const tracking = server.tracking(source.writeKey);
  const turnedAway = [];
  for (const total of [1, 2, 3])
    turnedAway.push((await tracking.track({ track: { userId: `u${total}`, event: "Order", properties: { total } } })).messageId);
  await tracking.track({ track: { userId: "big", event: "Order", properties: { total: 500 } } });

  const text = await waypost(["messages", "filtered", "--destination", "big orders"], env);
  expect(text.stderr).toBe("");
  expect(text.code).toBe(0);
  const lines = text.stdout.trim().split("\n");
  expect(lines[0]).toMatch(/^RECORDED\s+MESSAGE ID\s+TYPE\s+EVENT\s+USER\s+FATE\s+SOURCE$/);
  // Newest first, one line each, with the reason.
  expect(lines.slice(1).map((l) => l.split(/\s+/)[1])).toEqual([...turnedAway].reverse());
  expect(lines[1]).toMatch(new RegExp(`\\s+track\\s+Order\\s+u3\\s+filtered \\(filter\\)\\s+${source.id}$`));

  const json = await waypostJson<{ calls: Array<{ messageId: string; reason: string }>; nextPageToken?: string }>(
    ["messages", "filtered", "--destination", "big orders", "--reason", "filter", "--limit", "2"],
    env,
  );
  expect(json.calls.map((c) => c.messageId)).toEqual([turnedAway[2], turnedAway[1]]);
  expect(json.nextPageToken).toBeTruthy();
  const none = await waypostJson<{ calls?: unknown[] }>(
    ["messages", "filtered", "--destination", "big orders", "--reason", "transform"],
    env,
  );
  expect(none.calls ?? []).toEqual([]);

  const wrong = await waypost(["messages", "filtered", "--destination", "big orders", "--reason", "nope"], env);
  expect(wrong.code).toBe(2);
  expect(wrong.stderr).toContain("--reason: one of filtered, filter, consent, subscriptions, transform, disabled, integrations-off, any");
});
