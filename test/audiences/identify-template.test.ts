import pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import { identifyTemplate } from "../../src/audiences/identify-template.js";
import { templateSql } from "../../src/db/queries/identify-template-sql.js";
import { emptyCall } from "../../src/calls/call.js";
import { buildCallPayload } from "../../src/ingest/payload.js";
import { serverUrl } from "../helpers/database.js";

// The SQL path must produce, byte for byte, what buildCallPayload produces
// for the same identify call: receivers verify signatures over these bytes.

let client: pg.Client;
beforeAll(async () => {
  client = new pg.Client({ connectionString: serverUrl() });
  await client.connect();
});
afterAll(async () => {
  await client?.end();
});

const at = new Date("2026-11-22T10:04:05.123Z");
const messageId = "3f2b8c1e-9d4a-4e5f-8a7b-1c2d3e4f5a6b";

/** Fills the template in Postgres, as the sync statement does. */
async function sqlPayload(key: string, userId: string, valueText: string): Promise<string> {
  const template = identifyTemplate(key, at);
  const fill = templateSql(template, { userId: "c.user_id", value: "c.value_text", messageId: "c.message_id" }, 4);
  const result = await client.query<{ payload: string }>(
    `SELECT ${fill.sql} AS payload FROM (SELECT $1::text AS user_id, $2::text AS value_text, $3::text AS message_id) c`,
    [userId, valueText, messageId, ...fill.params],
  );
  return result.rows[0]!.payload;
}

function jsPayload(key: string, userId: string, value: unknown): string {
  const call = emptyCall("identify");
  call.userId = userId;
  call.traits = { [key]: value as never };
  return buildCallPayload(call, messageId, at);
}

const userIds = [
  "u1",
  'quote"backslash\\slash/',
  "controls\n\t\r\b\f\u0001\u001f\u007f",
  "unicode é ß 日本 😀 \u2028\u2029",
  "x".repeat(1024),
];
const values: unknown[] = [true, false, null, 42, -1.5, 1e21, 'text "q" \n é 😀', { b: 1, a: [1, "x", null], c: {} }, []];

test.each(userIds)("the SQL payload equals buildCallPayload's for user %#", async (userId) => {
  for (const value of values) {
    const expected = jsPayload("high_value_users", userId, value);
    const actual = await sqlPayload("high_value_users", userId, JSON.stringify(value));
    expect(actual).toBe(expected);
  }
});

test("key order is that of docs/webhooks.md#the-body", async () => {
  const payload = await sqlPayload("vip_customers_2024", "u1", "true");
  expect(Object.keys(JSON.parse(payload) as object)).toEqual(["version", "type", "userId", "traits", "context", "timestamp", "messageId"]);
  expect(payload).toBe(
    `{"version":1,"type":"identify","userId":"u1","traits":{"vip_customers_2024":true},"context":{},` +
      `"timestamp":"2026-11-22T10:04:05.123Z","messageId":"${messageId}"}`,
  );
});

test("a trait key that needs escaping is escaped as JSON.stringify does", async () => {
  const key = "日本_fans";
  expect(await sqlPayload(key, "u1", "1")).toBe(jsPayload(key, "u1", 1));
});
