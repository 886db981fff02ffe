import { expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import { cliEnv, waypost, tableRows, waypostJson } from "./support.js";

// `waypost profiles` against a real server: a person who used two devices
// before signing in, found by any of their ids, with their timeline across
// ids, searched by trait and identifier prefix, and their history.

let env: NodeJS.ProcessEnv;

interface ProfileJson {
  id: string;
  mergedIds?: string[];
  identifiers: Array<{ type: string; value: string }>;
  traits?: Record<string, { value: unknown; messageId: string }>;
  calls: string;
}

const test = testWith();
test.beforeAll(async ({ server }) => {
  env = cliEnv(server);
  const source = await server.createSource();
  const tracking = server.tracking(source.writeKey);
  await tracking.track({ track: { messageId: "m-opened", anonymousId: "phone-1", event: "Opened App" } });
  await tracking.track({ track: { messageId: "m-pricing", anonymousId: "laptop-1", event: "Viewed Pricing" } });
  await tracking.identify({
    identify: { messageId: "m-ada-phone", userId: "ada", anonymousId: "phone-1", traits: { plan: "pro", seats: 3 } },
  });
  await tracking.identify({ identify: { messageId: "m-ada-laptop", userId: "ada", anonymousId: "laptop-1" } });
  await tracking.identify({ identify: { messageId: "m-bob-laptop", userId: "bob", anonymousId: "laptop-1" } });
  await server.waypost.identity!.caughtUp();
});

test("profiles get: the same person by user, anonymous id, identifier or a merged id; identifiers, traits and counts", async () => {
  const ada = (await waypostJson<{ profile: ProfileJson }>(["profiles", "get", "--user", "ada"], env)).profile;
  expect(ada.identifiers.map((i) => `${i.type}:${i.value}`).sort()).toEqual([
    "anonymous_id:laptop-1",
    "anonymous_id:phone-1",
    "user_id:ada",
  ]);
  expect(ada.calls).toBe("4");
  expect(ada.traits?.plan).toMatchObject({ value: "pro", messageId: "m-ada-phone" });
  expect(ada.mergedIds).toHaveLength(1);

  const [byDevice, byIdentifier, byMergedId, text] = await Promise.all([
    waypostJson<{ profile: ProfileJson }>(["profiles", "get", "--anonymous", "laptop-1"], env),
    waypostJson<{ profile: ProfileJson }>(["profiles", "get", "--identifier", "user_id:ada"], env),
    waypostJson<{ profile: ProfileJson }>(["profiles", "get", "--id", ada.mergedIds![0]!], env),
    waypost(["profiles", "get", "--user", "ada"], env),
  ]);
  for (const found of [byDevice, byIdentifier, byMergedId]) expect(found.profile.id).toBe(ada.id);

  expect(text.code, text.stderr).toBe(0);
  expect(text.stdout).toMatch(new RegExp(`^id: +${ada.id}$`, "m"));
  expect(text.stdout).toMatch(new RegExp(`^merged ids: +${ada.mergedIds![0]}$`, "m"));
  expect(text.stdout).toMatch(/^calls: +4$/m);
  expect(text.stdout).toMatch(/^first seen: +\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/m);
  expect(text.stdout).toMatch(/^TYPE +VALUE +FIRST SEEN$/m);
  expect(text.stdout).toMatch(/^anonymous_id +phone-1 +\d{4}-/m);
  expect(text.stdout).toMatch(/^user_id +ada +\d{4}-/m);
  expect(text.stdout).toMatch(/^TRAIT +VALUE +SET +MESSAGE ID$/m);
  expect(text.stdout).toMatch(/^plan +"pro" +\d{4}-\S+ +m-ada-phone$/m);
  expect(text.stdout).toMatch(/^seats +3 +\d{4}-\S+ +m-ada-phone$/m);
  expect(text.stdout).toMatch(/^EVENT +CALLS$/m);
  expect(text.stdout).toMatch(/^\(identify\) +2$/m);
  expect(text.stdout).toMatch(/^Opened App +1$/m);
});

test("profiles events: newest first across every id, paging to --limit, the rest's token in --json", async () => {
  const all = await waypost(["profiles", "events", "--user", "ada"], env);
  expect(all.code, all.stderr).toBe(0);
  expect(all.stdout.split("\n")[0]).toMatch(/^TIME +TYPE +NAME +SOURCE +MESSAGE ID$/);
  expect(tableRows(all.stdout).map((row) => [row[1], row[2], row[4]])).toEqual([
    ["identify", "-", "m-ada-laptop"],
    ["identify", "-", "m-ada-phone"],
    ["track", "Viewed Pricing", "m-pricing"],
    ["track", "Opened App", "m-opened"],
  ]);
  for (const row of tableRows(all.stdout)) expect(row[0]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);

  const [three, byDevice] = await Promise.all([
    waypostJson<{ events: Array<{ messageId: string }>; nextPageToken?: string }>(
      ["profiles", "events", "--user", "ada", "--limit", "3"],
      env,
    ),
    waypost(["profiles", "events", "--anonymous", "phone-1", "--limit", "1"], env),
  ]);
  expect(three.events.map((e) => e.messageId)).toEqual(["m-ada-laptop", "m-ada-phone", "m-pricing"]);
  expect(three.nextPageToken).toBeTruthy();
  expect(tableRows(byDevice.stdout).map((row) => row[4])).toEqual(["m-ada-laptop"]);
});

test("profiles search: by a trait's value or an identifier's prefix, of a type", async () => {
  const ada = (await waypostJson<{ profile: ProfileJson }>(["profiles", "get", "--user", "ada"], env)).profile;
  const [pro, seats, json, none, bo, byType, text] = await Promise.all([
    waypostJson<{ profiles?: ProfileJson[] }>(["profiles", "search", "--trait", "plan=pro"], env),
    waypostJson<{ profiles?: ProfileJson[] }>(["profiles", "search", "--trait", "seats=3"], env),
    waypostJson<{ profiles?: ProfileJson[] }>(["profiles", "search", "--trait", 'plan="pro"'], env),
    waypostJson<{ profiles?: ProfileJson[] }>(["profiles", "search", "--trait", "plan=free"], env),
    waypostJson<{ profiles?: ProfileJson[] }>(["profiles", "search", "--prefix", "bo"], env),
    waypostJson<{ profiles?: ProfileJson[] }>(["profiles", "search", "--prefix", "laptop", "--type", "user_id"], env),
    waypost(["profiles", "search", "--prefix", "phone"], env),
  ]);
  for (const found of [pro, seats, json]) expect(found.profiles?.map((p) => p.id)).toEqual([ada.id]);
  expect(none.profiles ?? []).toEqual([]);
  expect(bo.profiles?.map((p) => p.identifiers.map((i) => i.value))).toEqual([["bob"]]);
  expect(byType.profiles ?? []).toEqual([]);
  expect(text.stdout.split("\n")[0]).toMatch(/^ID +CALLS +LAST SEEN +IDENTIFIERS$/);
  const [row] = tableRows(text.stdout);
  expect(row!.slice(0, 2)).toEqual([ada.id, "4"]);
  expect(row![3]).toContain("anonymous_id:phone-1");
  expect(row![3]).toContain("user_id:ada");
});

test("profiles merges: made, merged, and an identifier a rule left out with why", async () => {
  const [ada, bob] = await Promise.all([
    waypost(["profiles", "merges", "--user", "ada"], env),
    waypost(["profiles", "merges", "--user", "bob"], env),
  ]);
  expect(ada.code, ada.stderr).toBe(0);
  expect(ada.stdout.split("\n")[0]).toMatch(/^TIME +KIND +PROFILE +MESSAGE ID +DETAIL$/);
  const adaRows = tableRows(ada.stdout);
  expect(adaRows.map((row) => row[1])).toEqual(expect.arrayContaining(["created", "merged"]));
  const merged = adaRows.find((row) => row[1] === "merged")!;
  expect(merged[3]).toBe("m-ada-laptop");
  expect(merged[4]).toMatch(/^[0-9a-f-]{36} merged into it$/);

  const leftOut = tableRows(bob.stdout).find((row) => row[1] === "left_out");
  expect(leftOut?.[3]).toBe("m-bob-laptop");
  expect(leftOut?.[4]).toMatch(/^anonymous_id:laptop-1 left out: \S/);
  const json = await waypostJson<{ merges: Array<{ kind: string; reason?: string }> }>(["profiles", "merges", "--user", "bob"], env);
  expect(json.merges.find((m) => m.kind === "left_out")?.reason).toBeTruthy();
});

test("--help; usage errors exit 2; an unknown person or a token without profiles:read exits 1 with the code", async () => {
  const [top, profiles, get] = await Promise.all([
    waypost(["--help"], env),
    waypost(["profiles", "--help"], env),
    waypost(["profiles", "get", "--help"], env),
  ]);
  expect(top.stdout).toMatch(/^ {2}profiles\b/m);
  expect(profiles.code).toBe(0);
  expect(profiles.stdout).toMatch(/get[\s\S]*events[\s\S]*search[\s\S]*merges/);
  for (const flag of ["--id", "--identifier", "--user", "--anonymous", "--json"]) expect(get.stdout).toContain(flag);

  const usage = await Promise.all([
    waypost(["profiles", "get"], env),
    waypost(["profiles", "get", "--user", "ada", "--anonymous", "phone-1"], env),
    waypost(["profiles", "get", "--identifier", "ada"], env),
    waypost(["profiles", "events", "--user", "ada", "--limit", "0"], env),
    waypost(["profiles", "search"], env),
    waypost(["profiles", "search", "--trait", "plan=pro", "--prefix", "a"], env),
    waypost(["profiles", "search", "--trait", "plan"], env),
    waypost(["profiles", "search", "--type", "user_id", "--trait", "plan=pro"], env),
    waypost(["profiles", "merges"], env),
  ]);
  for (const result of usage) expect(result.code, result.stderr).toBe(2);
  expect(usage[0]!.stderr).toContain("name the profile: --id ID, --identifier TYPE:VALUE, --user U or --anonymous A");
  expect(usage[1]!.stderr).toContain("not --user and --anonymous");
  expect(usage[2]!.stderr).toContain('--identifier: "ada" is not TYPE:VALUE');

  const nobody = await Promise.all([
    waypost(["profiles", "get", "--user", "nobody"], env),
    waypost(["profiles", "events", "--user", "nobody"], env),
    waypost(["profiles", "get", "--id", "not-a-uuid"], env),
  ]);
  expect(nobody.map((r) => r.code)).toEqual([1, 1, 1]);
  expect(nobody[0]!.stderr).toMatch(/^waypost: not_found: .*user_id:nobody/);
  expect(nobody[1]!.stderr).toMatch(/^waypost: not_found: /);
  expect(nobody[2]!.stderr).toMatch(/^waypost: invalid_argument: /);

  const token = await waypostJson<{ secret: string }>(["tokens", "create", "--name", "no profiles", "--scope", "sources:read"], env);
  const refused = await waypost(["profiles", "get", "--user", "ada", "--token", token.secret], env);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/permission_denied: .*profiles:read/);
});

test("destinations --add-profile-id and --no-add-profile-id; deletions create --type forgets the whole person (last: it deletes ada)", async ({
  server,
  receiver,
}) => {
  const sourceId = (await server.sources.listSources({})).sources[0]!.id;
  const made = await waypostJson<{ destination: { id: string; addProfileId?: boolean } }>(
    ["destinations", "create", "--name", "profiled", "--source", sourceId, "--url", receiver.url, "--add-profile-id"],
    env,
  );
  expect(made.destination.addProfileId).toBe(true);
  const shown = await waypost(["destinations", "get", made.destination.id], env);
  expect(shown.stdout).toMatch(/^adds profileId: +yes$/m);
  const off = await waypost(["destinations", "update", made.destination.id, "--no-add-profile-id"], env);
  expect(off.code, off.stderr).toBe(0);
  expect((await server.destinations.getDestination({ id: made.destination.id })).destination?.addProfileId).toBe(false);
  await waypost(["destinations", "delete", made.destination.id], env);

  const deleted = await waypostJson<{ deletionRequest: { identifierType: string; messagesDeleted: string } }>(
    ["deletions", "create", "--user", "laptop-1", "--type", "anonymous_id"],
    env,
  );
  expect(deleted.deletionRequest.identifierType).toBe("anonymous_id");
  // laptop-1 is ada's (bob's identify left it out): ada's four calls go, bob's stays.
  expect(Number(deleted.deletionRequest.messagesDeleted)).toBe(4);
  const gone = await waypost(["profiles", "get", "--user", "ada"], env);
  expect(gone.code).toBe(1);
  expect(gone.stderr).toMatch(/not_found/);
  expect((await waypostJson<{ profile: ProfileJson }>(["profiles", "get", "--user", "bob"], env)).profile.calls).toBe("1");

  const badType = await waypost(["deletions", "create", "--user", "x", "--type", "shoe_size"], env);
  expect(badType.code).toBe(1);
  expect(badType.stderr).toMatch(/invalid_argument: .*identifierType/);
});
