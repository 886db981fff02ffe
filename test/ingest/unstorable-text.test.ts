import { describe, expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import { post, storedMessageIds } from "../compat/support.js";

let source: { id: string; writeKey: string };

const test = testWith();
test.beforeAll(async ({ server }) => {
  source = await server.createSource();
});

const nul = "\u0000";
const lone = "\ud800";

/**
 * Every place of a call that is stored, with the field path a rejection
 * names. `bad` puts the text in that place of an otherwise valid call.
 */
const places: Array<{ name: string; field: string; bad: (text: string) => Record<string, unknown> }> = [
  { name: "messageId", field: "messageId", bad: (t) => ({ type: "track", userId: "u", event: "e", messageId: `m${t}` }) },
  { name: "userId", field: "userId", bad: (t) => ({ type: "track", userId: `u${t}`, event: "e" }) },
  { name: "anonymousId", field: "anonymousId", bad: (t) => ({ type: "track", anonymousId: `a${t}`, event: "e" }) },
  { name: "previousId", field: "previousId", bad: (t) => ({ type: "alias", userId: "u", previousId: `p${t}` }) },
  { name: "groupId", field: "groupId", bad: (t) => ({ type: "group", userId: "u", groupId: `g${t}` }) },
  { name: "event", field: "event", bad: (t) => ({ type: "track", userId: "u", event: `e${t}` }) },
  { name: "name", field: "name", bad: (t) => ({ type: "page", userId: "u", name: `n${t}` }) },
  { name: "category", field: "category", bad: (t) => ({ type: "page", userId: "u", category: `c${t}` }) },
  {
    name: "a context value",
    field: "context.page.title",
    bad: (t) => ({ type: "track", userId: "u", event: "e", context: { page: { title: `x${t}` } } }),
  },
  {
    name: "a properties key",
    field: "properties[",
    bad: (t) => ({ type: "track", userId: "u", event: "e", properties: { [`k${t}`]: 1 } }),
  },
  {
    name: "a properties array item",
    field: "properties.list[1]",
    bad: (t) => ({ type: "track", userId: "u", event: "e", properties: { list: ["ok", `x${t}`] } }),
  },
  { name: "a traits value", field: "traits.email", bad: (t) => ({ type: "identify", userId: "u", traits: { email: `x${t}` } }) },
  {
    name: "an integrations key",
    field: "integrations[",
    bad: (t) => ({ type: "track", userId: "u", event: "e", integrations: { [`Hook${t}`]: true } }),
  },
  {
    name: "an integrations option",
    field: "integrations.Hook.region",
    bad: (t) => ({ type: "track", userId: "u", event: "e", integrations: { Hook: { region: `x${t}` } } }),
  },
];

describe.each([
  ["NUL", nul],
  ["a lone surrogate", lone],
])("%s in a stored text rejects only that call", (_label, text) => {
  test.for(places)("$name over /v1/batch", async ({ name, field, bad }, { server }) => {
    const tag = `${name.replace(/\W/g, "")}-${text === nul ? "nul" : "sur"}`;
    const batch = [
      { type: "track", userId: "u", event: "e", messageId: `${tag}-before` },
      { ...bad(text), ...(name === "messageId" ? {} : { messageId: `${tag}-bad` }) },
      { type: "track", userId: "u", event: "e", messageId: `${tag}-after` },
    ];
    const response = await post(server, "/v1/batch", { batch }, { writeKey: source.writeKey });
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ success: true, accepted: 2, rejectedCount: 1 });
    expect(response.json.rejected[0].index).toBe(1);
    expect(response.json.rejected[0].field.startsWith(field)).toBe(true);
    expect(response.json.rejected[0].reason).toContain("NUL characters or unpaired UTF-16 surrogates");
    const stored = await storedMessageIds(server, source.id);
    expect(stored).toEqual(expect.arrayContaining([`${tag}-before`, `${tag}-after`]));
    expect(stored).not.toContain(`${tag}-bad`);
  });
});

test("over the Connect API, a call with NUL in integrations is rejected and its batch neighbours stored", async ({ server }) => {
  const response = await fetch(`${server.url}/waypost.v1.TrackingService/Batch`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${source.writeKey}` },
    body: JSON.stringify({
      batch: [
        { track: { userId: "u", event: "e", messageId: "rpc-nul-ok" } },
        { track: { userId: "u", event: "e", messageId: "rpc-nul-bad", integrations: { [`A${nul}`]: true } } },
        { identify: { userId: "u", messageId: "rpc-sur-bad", traits: { name: `x${lone}` } } },
      ],
    }),
  });
  expect(response.status).toBe(200);
  const json = (await response.json()) as { accepted: number; rejected: Array<{ index: number; reason: string }> };
  expect(json.accepted).toBe(1);
  expect(json.rejected.map((r) => r.index)).toEqual([1, 2]);
  expect(json.rejected[1]!.reason).toContain("traits.name");
  const stored = await storedMessageIds(server, source.id);
  expect(stored).toContain("rpc-nul-ok");
  expect(stored).not.toContain("rpc-nul-bad");
});
