import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ConnectError } from "@connectrpc/connect";
import { expect } from "vitest";
import { Fate } from "../../gen/waypost/v1/delivery_pb.js";
import { DestinationKind, TestOutcome } from "../../gen/waypost/v1/destination_pb.js";
import { JobState } from "../../gen/waypost/v1/job_pb.js";
import { testWith } from "../helpers/fixtures.js";
import type { Receiver } from "../helpers/receiver.js";
import { completionsOf, type TestServer } from "../helpers/server.js";

const test = testWith();

async function refusal(work: Promise<unknown>): Promise<string> {
  try {
    await work;
  } catch (error) {
    return ConnectError.from(error).rawMessage;
  }
  throw new Error("not refused");
}

const consent = (categoryPreferences: unknown) => ({ consent: { categoryPreferences } }) as never;

async function deliveredMessageIds(server: TestServer, destinationId: string): Promise<string[]> {
  const { deliveries } = await server.deliveries.listDeliveries({ destinationId, pageSize: 100 });
  return deliveries.map((d) => d.messageId).sort();
}

async function fatesOf(server: TestServer, destinationId: string, reason = "") {
  const { calls } = await server.deliveries.listFates({ destinationId, fate: Fate.FILTERED, reason, pageSize: 100 });
  return calls.map((c) => [c.messageId, c.reason]).sort();
}

test("consent categories and require consent: stored, returned, listed, updated by mask, refused naming the entry", async ({
  server,
  receiver,
}) => {
  const source = await server.createSource();
  const base = { name: "consent", sourceIds: [source.id], webhooks: [{ url: receiver.url }] };
  const made = await server.createDestination({ ...base, consentCategories: ["Advertising", "Analytics"], requireConsent: true });
  expect(made).toMatchObject({ consentCategories: ["Advertising", "Analytics"], requireConsent: true });
  const { destination: got } = await server.destinations.getDestination({ id: made.id });
  expect(got).toMatchObject({ consentCategories: ["Advertising", "Analytics"], requireConsent: true });
  const { destinations } = await server.destinations.listDestinations({ sourceId: source.id });
  expect(destinations.find((d) => d.id === made.id)).toMatchObject({ consentCategories: ["Advertising", "Analytics"] });

  const { destination: updated } = await server.destinations.updateDestination({
    destination: { id: made.id, consentCategories: ["Functional"] },
    updateMask: { paths: ["consent_categories"] },
  });
  expect(updated).toMatchObject({ consentCategories: ["Functional"], requireConsent: true });
  expect(updated!.etag).not.toBe(made.etag);
  const { destination: off } = await server.destinations.updateDestination({
    destination: { id: made.id, requireConsent: false, consentCategories: [] },
    updateMask: { paths: ["require_consent", "consent_categories"] },
  });
  expect(off).toMatchObject({ consentCategories: [], requireConsent: false });
  // An empty mask: what is set (a category list, require consent on).
  const { destination: implied } = await server.destinations.updateDestination({
    destination: { id: made.id, consentCategories: ["Ads"], requireConsent: true },
  });
  expect(implied).toMatchObject({ consentCategories: ["Ads"], requireConsent: true });

  const create = (extra: object) => server.destinations.createDestination({ destination: { ...base, ...extra } });
  expect(await refusal(create({ consentCategories: ["a", "b", "c", ""] }))).toBe("destination.consentCategories[3]: must not be empty");
  expect(await refusal(create({ consentCategories: ["x".repeat(101)] }))).toBe(
    "destination.consentCategories[0]: is longer than 100 characters",
  );
  expect(await refusal(create({ consentCategories: Array.from({ length: 21 }, (_, i) => `c${i}`) }))).toBe(
    "destination.consentCategories: at most 20 categories, not 21",
  );
  const update = server.destinations.updateDestination({
    destination: { id: made.id, consentCategories: ["ok", "bad\0"] },
    updateMask: { paths: ["consent_categories"] },
  });
  expect(await refusal(update)).toBe("destination.consentCategories[1]: must not contain NUL characters");
});

test("calls held back by consent get no delivery, a FILTERED/consent fate, and are counted; the others are delivered", async ({
  server,
  receiver,
}) => {
  const source = await server.createSource();
  const advertising = await server.createDestination({
    name: "ads",
    sourceIds: [source.id],
    webhooks: [{ url: `${receiver.url}/ads` }],
    consentCategories: ["Advertising"],
  });
  const required = await server.createDestination({
    name: "required",
    sourceIds: [source.id],
    webhooks: [{ url: `${receiver.url}/required` }],
    requireConsent: true,
  });
  const free = await server.createDestination({ name: "free", sourceIds: [source.id], webhooks: [{ url: `${receiver.url}/free` }] });
  const tracking = server.tracking(source.writeKey);
  const done = Promise.all([
    completionsOf(server, advertising.id, 2),
    completionsOf(server, required.id, 2),
    completionsOf(server, free.id, 3),
  ]);
  const { messageIds } = await tracking.batch({
    batch: [
      { type: { case: "track", value: { userId: "u", event: "granted", context: consent({ Advertising: true }) } } },
      { type: { case: "track", value: { userId: "u", event: "refused", context: consent({ Advertising: false }) } } },
      { type: { case: "track", value: { userId: "u", event: "silent" } } },
    ],
  });
  const [granted, refused, silent] = messageIds as [string, string, string];
  const [ads, req, all] = await done;
  expect([...ads, ...req, ...all].every((c) => c.status === "delivered")).toBe(true);

  expect(await deliveredMessageIds(server, advertising.id)).toEqual([granted, silent].sort());
  expect(await deliveredMessageIds(server, required.id)).toEqual([granted, refused].sort());
  expect(await deliveredMessageIds(server, free.id)).toEqual([granted, refused, silent].sort());
  expect(await fatesOf(server, advertising.id, "consent")).toEqual([[refused, "consent"]]);
  expect(await fatesOf(server, required.id)).toEqual([[silent, "consent"]]);
  expect(await fatesOf(server, free.id)).toEqual([]);
  const bodies = receiver.requests.filter((r) => r.path.endsWith("/ads")).map((r) => JSON.parse(r.body).event);
  expect(bodies.sort()).toEqual(["granted", "silent"]);

  const explained = await server.deliveries.explainMessage({ messageId: refused });
  expect(explained.destinations.find((d) => d.destinationId === advertising.id)).toMatchObject({ fate: Fate.FILTERED, reason: "consent" });
  expect(explained.destinations.find((d) => d.destinationId === required.id)).toMatchObject({ fate: Fate.DELIVERED });

  const stats = await server.deliveries.getDestinationStats({ destinationId: advertising.id });
  expect(stats.filteredLast24h).toBe(1n);
  expect(stats.windows[0]!.filtered).toBe(1n);
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  expect(metrics).toContain(`waypost_calls_filtered_total{destination_id="${advertising.id}",reason="consent"} 1`);
  expect(metrics).toContain(`waypost_calls_filtered_total{destination_id="${required.id}",reason="consent"} 1`);
  expect(metrics).not.toContain(`destination_id="${free.id}",reason="consent"`);
});

test("the filter is checked before consent: a call both would hold back is filtered by the filter", async ({ server, receiver }) => {
  const source = await server.createSource();
  const destination = await server.createDestination({
    name: "both",
    sourceIds: [source.id],
    webhooks: [{ url: receiver.url }],
    filter: { type: "identify" },
    requireConsent: true,
  });
  const tracking = server.tracking(source.writeKey);
  const { messageId: track } = await tracking.track({ track: { userId: "u", event: "no" } });
  const { messageId: identify } = await tracking.identify({ identify: { userId: "u" } });
  expect(await fatesOf(server, destination.id)).toEqual(
    [
      [identify, "consent"],
      [track, "filter"],
    ].sort(),
  );
});

test("a change of consent settings applies to the next call at once (ingest's cache follows the revision)", async ({
  server,
  receiver,
}) => {
  const source = await server.createSource();
  const destination = await server.createDestination({
    name: "flip",
    sourceIds: [source.id],
    webhooks: [{ url: receiver.url }],
    enabled: false,
  });
  const tracking = server.tracking(source.writeKey);
  await server.destinations.updateDestination({ destination: { id: destination.id, enabled: true }, updateMask: { paths: ["enabled"] } });
  await tracking.track({ track: { userId: "u", event: "before" } });
  // Behind the API's back, as another process would.
  await server.pool.query("UPDATE destinations SET require_consent = true, revision = revision + 1 WHERE id = $1", [destination.id]);
  const { messageId } = await tracking.track({ track: { userId: "u", event: "after" } });
  expect(await fatesOf(server, destination.id)).toEqual([[messageId, "consent"]]);
});

test("a backfill applies consent as routing does: held-back calls get no delivery and count as filtered", async ({ server, receiver }) => {
  const source = await server.createSource();
  const tracking = server.tracking(source.writeKey);
  const since = timestampFromDate(new Date(Date.now() - 60_000));
  const kept: string[] = [];
  for (const [i, preferences] of [{ Analytics: true }, { Analytics: false }, undefined, { Analytics: true }, {}].entries()) {
    const context = preferences === undefined ? undefined : consent(preferences);
    const { messageId } = await tracking.track({ track: { userId: "u", event: `e${i}`, context } });
    if (preferences?.Analytics === true || preferences === undefined) kept.push(messageId);
  }
  // Disabled: the backfill's deliveries stay queued, where they can be counted.
  const destination = await server.createDestination({
    name: "later",
    sourceIds: [source.id],
    webhooks: [{ url: receiver.url }],
    enabled: false,
    consentCategories: ["Analytics"],
  });
  const { backfill } = await server.destinations.backfillDestination({ destinationId: destination.id, since });
  let state = backfill!;
  for (let i = 0; state.state === JobState.RUNNING && i < 600; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    state = (await server.destinations.getBackfill({ id: backfill!.id })).backfill!;
  }
  expect(state).toMatchObject({ state: JobState.DONE, candidates: 5n, created: 3n, filtered: 2n });
  const queued = await server.pool.query<{ message_id: string }>(
    "SELECT m.message_id FROM delivery_queue q JOIN messages m ON m.id = q.message_pk WHERE q.destination_id = $1",
    [destination.id],
  );
  expect(queued.rows.map((r) => r.message_id).sort()).toEqual(kept.sort());
});

test("TestDestination: NO_CONSENT for calls consent holds back, in the same order as routing", async ({ server }) => {
  const source = await server.createSource();
  const tracking = server.tracking(source.writeKey);
  const { messageId: yes } = await tracking.track({ track: { userId: "u", event: "yes", context: consent({ Ads: true }) } });
  const { messageId: no } = await tracking.track({ track: { userId: "u", event: "no", context: consent({ Ads: false }) } });
  const { messageId: none } = await tracking.identify({ identify: { userId: "u" } });
  const { calls } = await server.destinations.testDestination({
    destination: { sourceIds: [source.id], consentCategories: ["Ads"], requireConsent: true, filter: { type: "track" } },
    messageIds: [yes, no, none],
  });
  const outcome = (id: string) => calls.find((c) => c.messageId === id)?.outcome;
  expect(outcome(yes)).toBe(TestOutcome.SEND);
  expect(outcome(no)).toBe(TestOutcome.NO_CONSENT);
  // Consent would hold it back too, but the filter comes first.
  expect(outcome(none)).toBe(TestOutcome.FILTERED);
  const refused = server.destinations.testDestination({ destination: { sourceIds: [source.id], consentCategories: [""] } });
  expect(await refusal(refused)).toBe("destination.consentCategories[0]: must not be empty");
});

const orders = 'type = "track" and event = "Order Completed"';

function integrationDestination(server: TestServer, receiver: Receiver, sourceId: string, extra: object = {}) {
  return server.createDestination({
    name: `vendor ${Math.random()}`,
    sourceIds: [sourceId],
    kind: DestinationKind.INTEGRATION,
    integration: {
      slug: "webhook",
      settings: {},
      subscriptions: [
        { name: "Orders", subscribe: orders, action: "send", mapping: { url: `${receiver.url}/vendor`, method: "POST" } },
        { name: "Pages (off)", subscribe: 'type = "page"', action: "send", mapping: { url: `${receiver.url}/vendor` }, enabled: false },
      ],
    },
    ...extra,
  });
}

test("an integration destination: a call that matches no enabled subscription gets no delivery, fate FILTERED/subscriptions", async ({
  server,
  receiver,
}) => {
  const source = await server.createSource();
  const destination = await integrationDestination(server, receiver, source.id, { consentCategories: ["Analytics"] });
  const tracking = server.tracking(source.writeKey);
  const { messageIds } = await tracking.batch({
    batch: [
      { type: { case: "track", value: { userId: "u", event: "Order Completed", context: consent({ Analytics: true }) } } },
      { type: { case: "track", value: { userId: "u", event: "Signed Up" } } },
      { type: { case: "page", value: { userId: "u", name: "Home" } } },
      { type: { case: "track", value: { userId: "u", event: "Order Completed", context: consent({ Analytics: false }) } } },
    ],
  });
  const [order, signup, page, refused] = messageIds as [string, string, string, string];
  expect(await deliveredMessageIds(server, destination.id)).toEqual([order]);
  expect(await fatesOf(server, destination.id)).toEqual(
    [
      [signup, "subscriptions"],
      [page, "subscriptions"],
      // Consent comes before the subscriptions.
      [refused, "consent"],
    ].sort(),
  );
  const explained = await server.deliveries.explainMessage({ messageId: signup });
  expect(explained.destinations.find((d) => d.destinationId === destination.id)).toMatchObject({
    fate: Fate.FILTERED,
    reason: "subscriptions",
  });
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  expect(metrics).toContain(`waypost_calls_filtered_total{destination_id="${destination.id}",reason="subscriptions"} 2`);
  expect(metrics).toContain(`waypost_calls_filtered_total{destination_id="${destination.id}",reason="consent"} 1`);

  // Turning the page subscription on routes the next page call (a new revision, compiled again).
  const { destination: current } = await server.destinations.getDestination({ id: destination.id });
  const subscriptions = current!.integration!.subscriptions.map((s) => ({ ...s, enabled: true }));
  await server.destinations.updateDestination({
    destination: { id: destination.id, integration: { ...current!.integration!, subscriptions } },
    updateMask: { paths: ["integration"] },
  });
  const { messageId: page2 } = await tracking.page({ page: { userId: "u", name: "Pricing" } });
  expect(await deliveredMessageIds(server, destination.id)).toEqual([order, page2].sort());
});

test("TestDestination: NOT_SUBSCRIBED for an integration draft's calls that match no subscription", async ({ server, receiver }) => {
  const source = await server.createSource();
  const tracking = server.tracking(source.writeKey);
  const { messageId: order } = await tracking.track({ track: { userId: "u", event: "Order Completed" } });
  const { messageId: other } = await tracking.track({ track: { userId: "u", event: "Other" } });
  const draft = {
    sourceIds: [source.id],
    kind: DestinationKind.INTEGRATION,
    integration: { slug: "webhook", settings: {}, subscriptions: [{ name: "Orders", subscribe: orders, action: "send", mapping: {} }] },
  };
  const { calls } = await server.destinations.testDestination({ destination: draft, messageIds: [order, other] });
  expect(calls.find((c) => c.messageId === other)?.outcome).toBe(TestOutcome.NOT_SUBSCRIBED);
  expect(calls.find((c) => c.messageId === order)?.outcome).not.toBe(TestOutcome.NOT_SUBSCRIBED);
  // A stored integration destination's subscriptions, by id.
  const stored = await integrationDestination(server, receiver, source.id);
  const byId = await server.destinations.testDestination({ destination: { id: stored.id }, messageIds: [other] });
  expect(byId.calls[0]?.outcome).toBe(TestOutcome.NOT_SUBSCRIBED);
  const bad = { ...draft, integration: { ...draft.integration, subscriptions: [{ name: "x", subscribe: "(((", action: "send" }] } };
  expect(await refusal(server.destinations.testDestination({ destination: bad }))).toMatch(
    /^destination\.integration\.subscriptions\[0\]\.subscribe: /,
  );
});
