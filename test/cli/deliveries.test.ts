import { expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import type { RouteHandler } from "../../src/http/types.js";
import { cliEnv, startWaypost, waypost, waypostJson } from "./support.js";

let failing = false;
let env: NodeJS.ProcessEnv;
let destinationId: string;
let writeKey: string;
const sent: string[] = [];

interface DeliveryJson {
  id: string;
  messageId: string;
  userId?: string;
  status: string;
  body?: string;
  requestHeaders?: Record<string, string>;
}

/** Sees each ListDeliveries request as it reaches the server (the tail test follows the tail's polls). */
let onListDeliveries: (() => void) | undefined;
const listSpy: RouteHandler = async (_req, _res, path) => {
  if (path === "/waypost.v1.DeliveryService/ListDeliveries") onListDeliveries?.();
  return false;
};

const test = testWith({
  server: { routes: (defaults) => [listSpy, ...defaults] },
  receiver: { respond: () => ({ status: failing ? 422 : 200 }) },
});
test.beforeAll(async ({ server, receiver }) => {
  env = cliEnv(server);
  const source = await server.createSource();
  writeKey = source.writeKey;
  destinationId = (
    await server.createDestination({
      name: "hooks",
      sourceIds: [source.id],
      sharedSecret: "s3cret",
      webhooks: [{ url: receiver.url, headers: { "X-Api-Key": "key-123", "X-Team": "growth" } }],
    })
  ).id;
  // Two calls through the CLI itself, one of each output form.
  const done = server.waitForDeliveries(2);
  const text = await waypost(
    ["send", "track", "--write-key", writeKey, "--user", "alice", "--event", "Signed Up", "--properties", '{"plan":"pro"}'],
    env,
  );
  expect(text.code).toBe(0);
  sent.push(/message id:\s+(\S+)/.exec(text.stdout)![1]!);
  sent.push(
    (
      await waypostJson<{ messageId: string }>(
        ["send", "identify", "--write-key", writeKey, "--user", "bob", "--traits", '{"name":"Bob"}'],
        env,
      )
    ).messageId,
  );
  await done;
});

test("send refuses what does not fit the call type", async () => {
  const results = await Promise.all([
    waypost(["send", "track", "--user", "u"], env),
    waypost(["send", "bogus", "--write-key", writeKey], env),
    waypost(["send", "track", "--write-key", writeKey, "--traits", "{}"], env),
    waypost(["send", "track", "--write-key", writeKey, "--properties", "[1]"], env),
  ]);
  expect(results.map((r) => r.code)).toEqual([2, 2, 2, 2]);
  expect(results[2]!.stderr).toContain("--traits does not apply to track calls");
  expect(results[3]!.stderr).toContain("--properties: must be a JSON object");
  const refused = await waypost(["send", "track", "--write-key", writeKey, "--event", "E"], env);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/^waypost: invalid_argument: /);
});

test("deliveries list: filters, limit, table and JSON", async () => {
  const table = await waypost(["deliveries", "list", "--destination", destinationId], env);
  expect(table.code).toBe(0);
  const lines = table.stdout.trim().split("\n");
  expect(lines[0]).toMatch(/^ID\s+CREATED\s+STATUS\s+TYPE\s+MESSAGE ID\s+USER\s+ATTEMPTS$/);
  expect(lines[1]).toMatch(new RegExp(`^\\d+\\s+\\S+\\s+delivered\\s+identify\\s+${sent[1]}\\s+bob\\s+1$`));
  expect(lines[2]).toMatch(new RegExp(`delivered\\s+track\\s+${sent[0]}\\s+alice\\s+1$`));
  // Every destination's: the destination by name, not by id.
  const every = await waypost(["deliveries", "list"], env);
  expect(every.code, every.stderr).toBe(0);
  expect(every.stdout.split("\n")[0]).toMatch(/\sATTEMPTS\s+DESTINATION$/);
  expect(every.stdout).toMatch(new RegExp(`\\s${sent[1]}\\s+bob\\s+1\\s+hooks$`, "m"));
  const [byUser, byMessage, limited, since, until, failed] = await Promise.all([
    waypostJson<{ deliveries: DeliveryJson[] }>(["deliveries", "list", "--user-id", "alice"], env),
    waypostJson<{ deliveries: DeliveryJson[] }>(["deliveries", "list", "--message-id", sent[1]!], env),
    waypostJson<{ deliveries: DeliveryJson[]; nextPageToken: string }>(["deliveries", "list", "--limit", "1"], env),
    waypostJson<{ deliveries: DeliveryJson[] }>(["deliveries", "list", "--since", "1h", "--status", "delivered"], env),
    waypostJson<{ deliveries?: DeliveryJson[] }>(["deliveries", "list", "--until", "1h"], env),
    waypostJson<{ deliveries?: DeliveryJson[] }>(["deliveries", "list", "--status", "failed,expired"], env),
  ]);
  expect(byUser.deliveries.map((d) => d.messageId)).toEqual([sent[0]]);
  expect(byMessage.deliveries.map((d) => d.userId)).toEqual(["bob"]);
  expect(limited.deliveries).toHaveLength(1);
  expect(limited.nextPageToken).not.toBe("");
  expect(since.deliveries).toHaveLength(2);
  expect(until.deliveries).toBeUndefined();
  expect(failed.deliveries).toBeUndefined();
});

test("deliveries get: the body and headers sent, secrets masked", async ({ receiver }) => {
  const { deliveries } = await waypostJson<{ deliveries: DeliveryJson[] }>(["deliveries", "list", "--message-id", sent[0]!], env);
  const id = deliveries[0]!.id;
  const json = await waypostJson<{ delivery: DeliveryJson }>(["deliveries", "get", id], env);
  expect(receiver.requests.map((r) => r.body)).toContain(json.delivery.body);
  expect(json.delivery.requestHeaders).toMatchObject({ "X-Api-Key": "[masked]", "X-Team": "growth", "x-signature": "[masked]" });
  const text = await waypost(["deliveries", "get", id], env);
  expect(text.stdout).toMatch(/^status:\s+delivered$/m);
  expect(text.stdout).toContain("  X-Api-Key: [masked]\n");
  expect(text.stdout).toContain(json.delivery.body!);
  expect(text.stdout).toMatch(/^1\s+\S+\s+http:\/\/127\.0\.0\.1:\d+\/hook\s+success\s+200\s+\d+ ms/m);
  expect(text.stdout).not.toContain("key-123");
});

test("deliveries retry: one, or every matching one as a job with its progress", async ({ server }) => {
  const { deliveries } = await waypostJson<{ deliveries: DeliveryJson[] }>(["deliveries", "list", "--message-id", sent[0]!], env);
  const notNeeded = await waypost(["deliveries", "retry", deliveries[0]!.id], env);
  expect(notNeeded.code).toBe(1);
  expect(notNeeded.stderr).toMatch(/^waypost: failed_precondition: delivery \d+ is delivered/);
  expect((await waypost(["deliveries", "retry", deliveries[0]!.id, "--destination", destinationId], env)).code).toBe(2);

  failing = true;
  let done = server.waitForDeliveries(3, ["failed"]);
  for (const user of ["c1", "c2", "c3"]) await waypost(["send", "track", "--write-key", writeKey, "--user", user, "--event", "E"], env);
  const [first] = await done;
  failing = false;
  done = server.waitForDeliveries(1, ["delivered"]);
  const one = await waypost(["deliveries", "retry", first!.id], env);
  expect(one).toMatchObject({ code: 0, stdout: `delivery ${first!.id} is retrying: it will be sent again now\n` });
  expect((await done)[0]!.id).toBe(first!.id);

  done = server.waitForDeliveries(2, ["delivered"]);
  const bulk = await waypost(["deliveries", "retry", "--destination", destinationId, "--status", "failed", "--since", "1h"], env);
  expect(bulk.code).toBe(0);
  // Follows the job to its end: progress lines (not a terminal), then the job.
  expect(bulk.stdout).toContain(`[${"#".repeat(30)}] 100%  retried 2 of 2 matching\n`);
  expect(bulk.stdout).toMatch(/^matched:\s+2 /m);
  expect(bulk.stdout).toMatch(/^not replayable:\s+0 /m);
  expect(bulk.stdout).toMatch(/^state:\s+done$/m);
  await done;
  const again = await waypostJson<{ id: string; state: string; matched?: string }>(
    ["deliveries", "retry", "--destination", destinationId, "--detach"],
    env,
  );
  expect(again).toMatchObject({ state: "JOB_STATE_DONE" });
  expect(again.matched).toBeUndefined();
  const read = await waypostJson<{ job: { id: string } }>(["deliveries", "retry-job", again.id], env);
  expect(read.job.id).toBe(again.id);
});

test("deliveries tail prints deliveries as they finish, until SIGINT", async ({ server }) => {
  const tail = startWaypost(["deliveries", "tail", "--destination", destinationId, "-n", "1"], env);
  // The most recent finished delivery comes first: the tail is following now.
  await tail.waitForLine(() => true);
  const json = startWaypost(["deliveries", "tail", "--json", "-n", "1"], env);
  await json.waitForLine((line) => line.startsWith("{"));
  const done = server.waitForDeliveries(1);
  const { messageId } = await waypostJson<{ messageId: string }>(
    ["send", "page", "--write-key", writeKey, "--user", "dora", "--name", "Home"],
    env,
  );
  await done;
  const line = await tail.waitForLine((l) => l.includes(messageId));
  // The destination by name, not by id.
  expect(line).toMatch(new RegExp(`^\\S+Z\\s+delivered\\s+\\d+\\s+hooks\\s+page\\s+${messageId}\\s+dora\\s+200$`));
  const jsonLine = await json.waitForLine((l) => l.includes(messageId));
  expect(JSON.parse(jsonLine)).toMatchObject({ messageId, userId: "dora", status: "DELIVERY_STATUS_DELIVERED", type: "page" });
  tail.child.kill("SIGINT");
  json.child.kill("SIGINT");
  expect(await tail.exited).toBe(0);
  expect(await json.exited).toBe(0);
  // Each delivery once.
  expect(tail.lines.filter((l) => l.includes(messageId))).toHaveLength(1);
});

test("stats: every destination as a table, one as JSON with its series", async ({ server }) => {
  // A call its consent held back, as routing records it: counted by reason.
  await server.pool.query(
    `INSERT INTO call_fates (message_pk, destination_id, fate, reason, recorded_at)
     SELECT id, $2, 'filtered', 'consent', now() FROM messages WHERE message_id = $1`,
    [sent[0], destinationId],
  );
  const table = await waypost(["stats"], env);
  expect(table.code).toBe(0);
  expect(table.stdout.split("\n")[0]).toMatch(/^DESTINATION\s+NAME\s+DELIVERED 1H\s+FAILED 1H\s+EXPIRED 1H\s+DELIVERED 24H/);
  expect(table.stdout).toMatch(new RegExp(`^${destinationId}\\s+hooks\\s+\\d+\\s+`, "m"));
  expect(table.stdout.split("\n")[0]).toMatch(/\sFAILED TRIES 1H\s+FAILED TRIES 24H\s+BACKLOG\s+HELD BACK 24H\s*$/);
  expect(table.stdout).toMatch(new RegExp(`^${destinationId}\\s.*\\sconsent 1\\s*$`, "m"));
  const one = await waypostJson<{
    destinationId: string;
    deliveredLast24h: string;
    heldBackLast24h: { consent?: string };
    series: Array<{ startTime: string; delivered?: string }>;
  }>(["stats", "--destination", destinationId], env);
  expect(one.destinationId).toBe(destinationId);
  expect(Number(one.deliveredLast24h)).toBeGreaterThanOrEqual(6);
  expect(one.series.length).toBeGreaterThanOrEqual(1);
  expect(one.heldBackLast24h.consent).toBe("1");
  const all = await waypostJson<{ destinations: Array<{ destinationId: string }> }>(["stats"], env);
  expect(all.destinations.map((d) => d.destinationId)).toEqual([destinationId]);
});

test("the common flags work after any command's own arguments, and are the ones used", async ({ server }) => {
  // No WAYPOST_URL or WAYPOST_ADMIN_TOKEN: only the flags lead to the server.
  const bare = cliEnv(undefined);
  const common = ["--url", server.url, "--token", server.adminToken, "--json"];
  const { deliveries } = await waypostJson<{ deliveries: DeliveryJson[] }>(["deliveries", "list", "--message-id", sent[1]!], env);
  const deliveredId = deliveries[0]!.id;
  const [get, retryOne, list, destination, stats, retryMatching] = await Promise.all([
    waypost(["deliveries", "get", deliveredId, ...common], bare),
    waypost(["deliveries", "retry", deliveredId, ...common], bare),
    waypost(["deliveries", "list", "--destination", destinationId, ...common], bare),
    waypost(["destinations", "get", destinationId, ...common], bare),
    waypost(["stats", "--destination", destinationId, ...common], bare),
    waypost(["deliveries", "retry", "--destination", destinationId, "--status", "expired", ...common], bare),
  ]);
  for (const result of [get, list, destination, stats, retryMatching]) {
    expect(result.code, result.stderr).toBe(0);
    expect(() => JSON.parse(result.stdout)).not.toThrow();
  }
  expect(JSON.parse(get.stdout).delivery.id).toBe(deliveredId);
  // The server answered (the delivery is delivered already): the flags were taken, not refused.
  expect(retryOne.code).toBe(1);
  expect(retryOne.stderr).toMatch(/^waypost: failed_precondition: delivery \d+ is delivered/);

  // send authenticates with its write key; the common --token is accepted all the same.
  const delivered = server.waitForDeliveries(1);
  const send = await waypost(["send", "track", "--write-key", writeKey, "--user", "flo", "--event", "E", ...common], bare);
  expect(send.code, send.stderr).toBe(0);
  expect(JSON.parse(send.stdout).messageId).toMatch(/\S/);
  await delivered;
});

test("--destination takes a name as well as an id; a name several destinations have is a usage error listing them", async ({
  server,
  receiver,
}) => {
  const [byId, byName, statsByName] = await Promise.all([
    waypostJson<{ deliveries: DeliveryJson[] }>(["deliveries", "list", "--destination", destinationId], env),
    waypostJson<{ deliveries: DeliveryJson[] }>(["deliveries", "list", "--destination", "hooks"], env),
    waypostJson<{ destinationId: string }>(["stats", "--destination", "hooks"], env),
  ]);
  expect(byName.deliveries.map((d) => d.id)).toEqual(byId.deliveries.map((d) => d.id));
  expect(statsByName.destinationId).toBe(destinationId);

  const twins = [
    await server.createDestination({ name: "twin", sourceIds: [], webhooks: [{ url: receiver.url }] }),
    await server.createDestination({ name: "twin", sourceIds: [], webhooks: [{ url: receiver.url }] }),
  ];
  const [ambiguous, unknown] = await Promise.all([
    waypost(["deliveries", "retry", "--destination", "twin", "--status", "failed"], env),
    waypost(["stats", "--destination", "nobody"], env),
  ]);
  expect(ambiguous.code).toBe(2);
  expect(ambiguous.stderr).toContain('--destination: 2 destinations are named "twin"; give one\'s id:');
  for (const twin of twins) expect(ambiguous.stderr).toContain(`  ${twin.id}  twin\n`);
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toContain('--destination: no destination has the id or name "nobody"');
});

test("deliveries tail starts from now: what finished before is shown only when asked for with -n", async ({ server }) => {
  // The tail's polls, seen by the server: once a second one arrives, the first has answered and the tail follows.
  let polls = 0;
  const following = new Promise<void>((resolve) => {
    onListDeliveries = () => {
      if (++polls === 2) resolve();
    };
  });
  const tail = startWaypost(["deliveries", "tail", "--destination", destinationId], env);
  await following;
  const done = server.waitForDeliveries(1);
  const { messageId } = await waypostJson<{ messageId: string }>(
    ["send", "track", "--write-key", writeKey, "--user", "erin", "--event", "Now"],
    env,
  );
  await done;
  await tail.waitForLine((l) => l.includes(messageId));
  tail.child.kill("SIGINT");
  expect(await tail.exited).toBe(0);
  // Deliveries of this destination had finished before the tail began; none of them is printed.
  expect(tail.lines).toHaveLength(1);
  expect(tail.lines[0]).toContain(messageId);
});
