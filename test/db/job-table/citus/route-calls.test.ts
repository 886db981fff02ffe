import pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import { callOrderingKey, countFiltered, routeCalls, routedTo } from "../../../../src/db/job-table/citus/route-calls.js";
import { orderingKeySql } from "../../../../src/db/job-table/index.js";
import { routingCondition } from "../../../../src/db/job-table/store-messages.js";
import { serverUrl } from "../../../helpers/database.js";

// Ingest on Citus routes in the process: its rules must be the SQL ones,
// case for case (the cases of test/db/routing.test.ts, and some more).
let client: pg.Client;

beforeAll(async () => {
  client = new pg.Client({ connectionString: serverUrl() });
  await client.connect();
});
afterAll(async () => {
  await client?.end();
});

const cases: Array<[integrations: Record<string, unknown> | undefined, destination: string, expected: boolean]> = [
  [undefined, "hook", true],
  [{}, "hook", true],
  [{ Other: false }, "hook", true],
  [{ All: false }, "hook", false],
  [{ All: true }, "hook", true],
  [{ All: false, Other: true }, "hook", false],
  [{ All: false, Webhooks: true }, "hook", true],
  [{ All: true, Webhooks: false }, "hook", false],
  [{ Webhooks: false, hook: true }, "hook", true],
  [{ Webhooks: true, hook: false }, "hook", false],
  [{ Webhooks: true, 'it\'s "quoted"': false }, 'it\'s "quoted"', false],
  [{ webhooks: false }, "hook", true],
  [{ all: false }, "hook", true],
  [{ Hook: false }, "hook", true],
  [{ All: false, Webhooks: { option: 1 } }, "hook", true],
  [{ All: false, hook: null }, "hook", true],
  [{ All: "false" }, "hook", true],
  [{ All: 0 }, "hook", true],
];

test.each(cases)("integrations %j to %s: routed %s, in SQL and in JS", async (integrations, destination, expected) => {
  const sql = await client.query<{ routed: boolean }>(`SELECT ${routingCondition("$1::jsonb", "$2::text")} AS routed`, [
    integrations === undefined ? null : JSON.stringify(integrations),
    destination,
  ]);
  expect(sql.rows[0]!.routed).toBe(expected);
  expect(routedTo(integrations as never, destination)).toBe(expected);
});

test("the ordering key is the SQL one: userId, else anonymousId, empty is none", async () => {
  for (const [userId, anonymousId] of [
    ["u", "a"],
    ["", "a"],
    ["", ""],
    ["u", undefined],
    ["", undefined],
  ] as const) {
    const sql = await client.query<{ key: string | null }>(`SELECT ${orderingKeySql("$1::text", "$2::text")} AS key`, [
      userId,
      anonymousId ?? null,
    ]);
    expect(callOrderingKey(userId, anonymousId)).toBe(sql.rows[0]!.key);
  }
});

test("routeCalls: deliveries in the calls' order, fates say why (disabled, then integrations, then held back)", () => {
  const targets = [
    { id: "d-ordered", name: "ordered", enabled: true, ordered: true },
    { id: "d-off", name: "off", enabled: false, ordered: false },
    { id: "d-plain", name: "plain", enabled: true, ordered: false },
  ];
  const call = (messagePk: string, fields: object) => ({
    messagePk,
    message: { messageId: messagePk, type: "track", userId: "", payload: "{}", integrations: undefined, ...fields },
  });
  const routed = routeCalls(
    [
      call("1", { anonymousId: "anon" }),
      call("2", { userId: "u", integrations: { plain: false }, filteredOut: { "d-ordered": "consent", "d-off": "filter" } }),
      call("3", { userId: "u", filteredOut: { "d-plain": "filter" } }),
    ],
    targets,
  );
  expect(routed.deliveries).toEqual([
    { destinationId: "d-ordered", messagePk: "1", orderingKey: "anon" },
    { destinationId: "d-plain", messagePk: "1", orderingKey: null },
    { destinationId: "d-ordered", messagePk: "3", orderingKey: "u" },
  ]);
  expect(routed.fates).toEqual([
    { messagePk: "1", destinationId: "d-off", fate: "disabled", reason: null },
    { messagePk: "2", destinationId: "d-ordered", fate: "filtered", reason: "consent" },
    { messagePk: "2", destinationId: "d-off", fate: "disabled", reason: null },
    { messagePk: "2", destinationId: "d-plain", fate: "integrations_off", reason: null },
    { messagePk: "3", destinationId: "d-off", fate: "disabled", reason: null },
    { messagePk: "3", destinationId: "d-plain", fate: "filtered", reason: "filter" },
  ]);
  expect(countFiltered(routed.fates).sort()).toEqual([
    ["d-ordered", "consent", 1],
    ["d-plain", "filter", 1],
  ]);
});
