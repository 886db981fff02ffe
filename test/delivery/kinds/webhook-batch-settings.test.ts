import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "vitest";
import { testWith } from "../../helpers/fixtures.js";

const test = testWith();

type Batch = { maxCalls: number; maxBytes?: number; maxWaitMs?: number };

const url = "https://example.com/hook";

test("batch settings: defaults filled in, returned as stored, removed by an update without them", async ({ server }) => {
  const created = await server.createDestination({
    name: "batched",
    webhooks: [{ url }, { url: "https://example.com/other", batch: { maxCalls: 100 } }],
  });
  expect(created.webhooks[0]!.batch).toBeUndefined();
  expect(created.webhooks[1]!.batch).toMatchObject({ maxCalls: 100, maxBytes: 262_144, maxWaitMs: 1000 });
  const { destination: updated } = await server.destinations.updateDestination({
    destination: { id: created.id, webhooks: [{ url, batch: { maxCalls: 1000, maxBytes: 512_000, maxWaitMs: 0 } }] },
    updateMask: { paths: ["webhooks"] },
  });
  expect(updated!.webhooks[0]!.batch).toMatchObject({ maxCalls: 1000, maxBytes: 512_000, maxWaitMs: 0 });
  const got = await server.destinations.getDestination({ id: created.id });
  expect(got.destination!.webhooks[0]!.batch).toMatchObject({ maxCalls: 1000, maxBytes: 512_000, maxWaitMs: 0 });
  const { destination: single } = await server.destinations.updateDestination({
    destination: { id: created.id, webhooks: [{ url }] },
    updateMask: { paths: ["webhooks"] },
  });
  expect(single!.webhooks[0]!.batch).toBeUndefined();
});

test("bad batch settings are refused naming the field", async ({ server }) => {
  const refused = async (batch: Batch, field: string, problem: string) => {
    const error = await server.destinations
      .createDestination({ destination: { name: "bad", webhooks: [{ url }, { url, batch }] } })
      .then(() => undefined, ConnectError.from);
    expect(error?.code).toBe(Code.InvalidArgument);
    expect(error?.rawMessage).toContain(`destination.webhooks[1].batch.${field}`);
    expect(error?.rawMessage).toContain(problem);
  };
  await refused({ maxCalls: 0 }, "maxCalls", "is required");
  await refused({ maxCalls: 1 }, "maxCalls", "from 2 to 1000, got 1");
  await refused({ maxCalls: 1001 }, "maxCalls", "got 1001");
  await refused({ maxCalls: 10, maxBytes: 512_001 }, "maxBytes", "from 1024 to 512000");
  await refused({ maxCalls: 10, maxBytes: 100 }, "maxBytes", "got 100");
  await refused({ maxCalls: 10, maxWaitMs: 60_001 }, "maxWaitMs", "from 0 to 60000");
  await refused({ maxCalls: 10, maxWaitMs: -1 }, "maxWaitMs", "got -1");
});
