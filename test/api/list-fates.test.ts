import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "vitest";
import { Fate } from "../../gen/waypost/v1/delivery_pb.js";
import { testWith } from "../helpers/fixtures.js";
import { completionsOf, type TestServer } from "../helpers/server.js";

const test = testWith();

async function failure(promise: Promise<unknown>): Promise<ConnectError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
  if (!error) throw new Error("expected the call to fail");
  return error;
}

test("the calls a destination filtered, newest first, by reason, paged without repeats or gaps", async ({ server, receiver }) => {
  const source = await server.createSource();
  const destination = await server.createDestination({
    name: "identifies only",
    sourceIds: [source.id],
    webhooks: [{ url: receiver.url }],
    filter: { type: "identify" },
  });
  const dropping = await server.createDestination({
    name: "drops every track",
    sourceIds: [source.id],
    webhooks: [{ url: receiver.url }],
    transform: "function transform(e) { return e.type === 'track' ? null : e }",
  });
  const tracking = server.tracking(source.writeKey);
  const dropped = completionsOf(server, dropping.id, 6);
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await tracking.track({ track: { userId: `u${i}`, event: `Event ${i}` } })).messageId);
  await tracking.identify({ identify: { userId: "kept" } });
  await dropped;

  // Three pages of two: newest first, each call once.
  const seen: string[] = [];
  let pageToken = "";
  let pages = 0;
  do {
    const page = await server.deliveries.listFates({ destinationId: destination.id, pageSize: 2, pageToken });
    for (const call of page.calls) {
      expect(call).toMatchObject({ sourceId: source.id, type: "track", fate: Fate.FILTERED, reason: "filter" });
      expect(call.event).toBe(`Event ${ids.indexOf(call.messageId)}`);
      expect(call.userId).toBe(`u${ids.indexOf(call.messageId)}`);
      expect(call.recordTime).toBeDefined();
      expect(call.receiveTime).toBeDefined();
    }
    seen.push(...page.calls.map((c) => c.messageId));
    pageToken = page.nextPageToken;
    pages++;
  } while (pageToken && pages < 10);
  expect(seen).toEqual([...ids].reverse());

  // The transform's drops are filtered with reason "transform"; the filter's reason finds none there.
  const byTransform = await server.deliveries.listFates({ destinationId: dropping.id, fate: Fate.FILTERED, reason: "transform" });
  expect(byTransform.calls.map((c) => c.messageId).sort()).toEqual([...ids].sort());
  expect(byTransform.calls.every((c) => c.reason === "transform")).toBe(true);
  expect((await server.deliveries.listFates({ destinationId: dropping.id, reason: "filter" })).calls).toEqual([]);
  expect((await server.deliveries.listFates({ destinationId: destination.id, fate: Fate.DISABLED })).calls).toEqual([]);
});

test("disabled and integrations-off fates, and a time range", async ({ server, receiver }) => {
  const source = await server.createSource();
  const disabled = await server.createDestination({
    name: "off",
    sourceIds: [source.id],
    webhooks: [{ url: receiver.url }],
    enabled: false,
  });
  const optedOut = await server.createDestination({ name: "opted out", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  const tracking = server.tracking(source.writeKey);
  const { messageId } = await tracking.track({ track: { userId: "u", event: "Off", integrations: { "opted out": false } } });

  const all = await server.deliveries.listFates({ destinationId: disabled.id });
  expect(all.calls.map((c) => [c.messageId, c.fate, c.reason])).toEqual([[messageId, Fate.DISABLED, ""]]);
  expect(all.nextPageToken).toBe("");
  const off = await server.deliveries.listFates({ destinationId: optedOut.id, fate: Fate.INTEGRATIONS_OFF });
  expect(off.calls.map((c) => c.messageId)).toEqual([messageId]);

  const recorded = all.calls[0]!.recordTime!;
  const later = new Date(Number(recorded.seconds) * 1000 + 60_000);
  expect((await server.deliveries.listFates({ destinationId: disabled.id, since: timestampFromDate(later) })).calls).toEqual([]);
  expect((await server.deliveries.listFates({ destinationId: disabled.id, until: timestampFromDate(later) })).calls).toHaveLength(1);
});

test("bad requests are invalid_argument naming the field; an unknown destination is not_found", async ({ server, receiver }) => {
  const { id } = await server.createDestination({ name: "any", sourceIds: [], webhooks: [{ url: receiver.url }] });
  const cases: Array<[Parameters<TestServer["deliveries"]["listFates"]>[0], RegExp]> = [
    [{}, /^destinationId: is required$/],
    [{ destinationId: "nope" }, /^destinationId: /],
    [{ destinationId: id, fate: Fate.DELIVERED }, /^fate: FATE_DELIVERED is not recorded when a call is routed/],
    [{ destinationId: id, reason: "bogus" }, /^reason: must be "filter", "consent", "subscriptions" or "transform"/],
    [{ destinationId: id, fate: Fate.DISABLED, reason: "filter" }, /^reason: goes only with FATE_FILTERED$/],
    [{ destinationId: id, pageToken: "garbage" }, /^pageToken: /],
    [{ destinationId: id, pageSize: -1 }, /^pageSize: /],
  ];
  for (const [request, message] of cases) {
    const error = await failure(server.deliveries.listFates(request));
    expect(error.code, error.rawMessage).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toMatch(message);
  }
  const missing = await failure(server.deliveries.listFates({ destinationId: "00000000-0000-4000-8000-000000000000" }));
  expect(missing.code).toBe(Code.NotFound);
});
