import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";

/**
 * Static headers that carry credentials are write-only: every
 * DestinationService answer masks them, and an update that sends back what
 * it was shown keeps the stored values.
 */
const test = testWith({ server: { config: { role: "api" } } });
let sourceId = "";

test.beforeAll(async ({ server }) => {
  sourceId = (await server.createSource()).id;
});

const credentials = {
  Authorization: "Bearer live-credential-1",
  "X-Api-Key": "live-credential-2",
  "X-Client-Secret": "live-credential-3",
  "x-auth-token": "live-credential-4",
};
const shown = {
  Authorization: "[masked]",
  "X-Api-Key": "[masked]",
  "X-Client-Secret": "[masked]",
  "x-auth-token": "[masked]",
  "X-Team": "growth",
};

async function storedWebhooks(server: TestServer, id: string): Promise<Array<{ url: string; headers: Record<string, string> }>> {
  return (await server.pool.query("SELECT webhooks FROM destinations WHERE id = $1", [id])).rows[0].webhooks;
}

async function failure(promise: Promise<unknown>): Promise<ConnectError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
  if (!error) throw new Error("expected the call to fail");
  return error;
}

test("Create, Get, List and Update answer credential header values masked; other headers as set", async ({ server }) => {
  const { destination } = await server.destinations.createDestination({
    destination: {
      name: "masked",
      sourceIds: [sourceId],
      webhooks: [{ url: "https://hooks.example.com/a", headers: { ...credentials, "X-Team": "growth" } }],
    },
  });
  expect(destination!.webhooks[0]!.headers).toEqual(shown);
  const id = destination!.id;
  expect((await server.destinations.getDestination({ id })).destination!.webhooks[0]!.headers).toEqual(shown);
  const listed = (await server.destinations.listDestinations({})).destinations.find((d) => d.id === id)!;
  expect(listed.webhooks[0]!.headers).toEqual(shown);
  // The stored values, which deliveries send, are the real ones.
  expect((await storedWebhooks(server, id))[0]!.headers).toEqual({ ...credentials, "X-Team": "growth" });

  const raw = await fetch(`${server.url}/waypost.v1.DestinationService/GetDestination`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${server.adminToken}` },
    body: JSON.stringify({ id }),
  });
  expect(await raw.text()).not.toContain("live-credential");
});

test("an update that sends masked values back keeps the stored ones; a changed value replaces it", async ({ server }) => {
  const { destination } = await server.destinations.createDestination({
    destination: {
      name: "edited",
      sourceIds: [sourceId],
      webhooks: [
        { url: "https://hooks.example.com/one", headers: { Authorization: "Bearer one" } },
        { url: "https://hooks.example.com/two", headers: { Authorization: "Bearer two", "X-Api-Key": "k2" } },
      ],
    },
  });
  const id = destination!.id;
  const shownWebhooks = destination!.webhooks.map((w) => ({ url: w.url, headers: { ...w.headers } }));

  // As a form would: the webhooks as shown, reordered (matched by URL), one header changed.
  const [one, two] = shownWebhooks;
  const { destination: reordered } = await server.destinations.updateDestination({
    destination: {
      id,
      name: "edited again",
      webhooks: [{ url: two!.url, headers: { ...two!.headers, "X-Api-Key": "k2-new" } }, one!],
    },
    updateMask: { paths: ["name", "webhooks"] },
  });
  expect(reordered!.webhooks.map((w) => w.headers)).toEqual([
    { Authorization: "[masked]", "X-Api-Key": "[masked]" },
    { Authorization: "[masked]" },
  ]);
  expect(await storedWebhooks(server, id)).toEqual([
    { url: "https://hooks.example.com/two", headers: { Authorization: "Bearer two", "X-Api-Key": "k2-new" } },
    { url: "https://hooks.example.com/one", headers: { Authorization: "Bearer one" } },
  ]);

  // A URL edited in place: the webhook at the same position supplies the value.
  await server.destinations.updateDestination({
    destination: {
      id,
      webhooks: [reordered!.webhooks[0]!, { url: "https://hooks.example.com/one-moved", headers: { Authorization: "[masked]" } }],
    },
    updateMask: { paths: ["webhooks"] },
  });
  expect((await storedWebhooks(server, id))[1]).toEqual({
    url: "https://hooks.example.com/one-moved",
    headers: { Authorization: "Bearer one" },
  });
});

test("[masked] with no stored value behind it is invalid_argument naming the header", async ({ server }) => {
  const created = await failure(
    server.destinations.createDestination({
      destination: {
        name: "copied",
        sourceIds: [sourceId],
        webhooks: [{ url: "https://hooks.example.com/c", headers: { Authorization: "[masked]" } }],
      },
    }),
  );
  expect(created.code).toBe(Code.InvalidArgument);
  expect(created.rawMessage).toBe(
    'destination.webhooks[0].headers.Authorization: is "[masked]" but there is no stored value to keep: send the real value',
  );

  const { destination } = await server.destinations.createDestination({
    destination: { name: "plain", sourceIds: [sourceId], webhooks: [{ url: "https://hooks.example.com/p" }] },
  });
  const updated = await failure(
    server.destinations.updateDestination({
      destination: { id: destination!.id, webhooks: [{ url: "https://hooks.example.com/p", headers: { "X-Api-Key": "[masked]" } }] },
      updateMask: { paths: ["webhooks"] },
    }),
  );
  expect(updated.code).toBe(Code.InvalidArgument);
  expect(updated.rawMessage).toMatch(/^destination\.webhooks\[0\]\.headers\.X-Api-Key: is "\[masked\]"/);
  expect((await storedWebhooks(server, destination!.id))[0]!.headers).toEqual({});
});
