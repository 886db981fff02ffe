import pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import { routingCondition } from "../../src/db/job-table/store-messages.js";
import { serverUrl } from "../helpers/database.js";

let client: pg.Client;

beforeAll(async () => {
  client = new pg.Client({ connectionString: serverUrl() });
  await client.connect();
});
afterAll(async () => {
  await client?.end();
});

/** Evaluates the routing condition in Postgres, as the ingest statement does. */
async function routed(integrations: Record<string, unknown> | undefined, destination = "hook"): Promise<boolean> {
  const result = await client.query(`SELECT ${routingCondition("$1::jsonb", "$2::text")} AS routed`, [
    integrations === undefined ? null : JSON.stringify(integrations),
    destination,
  ]);
  return result.rows[0].routed;
}

test("no integrations object, or none of the keys: delivered", async () => {
  expect(await routed(undefined)).toBe(true);
  expect(await routed({})).toBe(true);
  expect(await routed({ Other: false })).toBe(true);
});

test("All decides when neither Webhooks nor the destination's name is present", async () => {
  expect(await routed({ All: false })).toBe(false);
  expect(await routed({ All: true })).toBe(true);
  expect(await routed({ All: false, Other: true })).toBe(false);
});

test("Webhooks overrides All", async () => {
  expect(await routed({ All: false, Webhooks: true })).toBe(true);
  expect(await routed({ All: true, Webhooks: false })).toBe(false);
});

test("the destination's own name overrides Webhooks", async () => {
  expect(await routed({ Webhooks: false, hook: true })).toBe(true);
  expect(await routed({ Webhooks: true, hook: false })).toBe(false);
  expect(await routed({ Webhooks: true, 'it\'s "quoted"': false }, 'it\'s "quoted"')).toBe(false);
});

test("keys are case sensitive", async () => {
  expect(await routed({ webhooks: false })).toBe(true);
  expect(await routed({ all: false })).toBe(true);
  expect(await routed({ Hook: false })).toBe(true);
});

test("an options object counts as on", async () => {
  expect(await routed({ All: false, Webhooks: { option: 1 } })).toBe(true);
});
