import { expect, test } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import type { ClaimedDelivery } from "../../../src/db/job-table/index.js";
import { createBrokerKind } from "../../../src/delivery/kinds/broker-kind.js";
import type { BrokerPublisher } from "../../../src/delivery/kinds/broker-publisher.js";
import type { DestinationCommon } from "../../../src/delivery/kinds/kind.js";
import { createTargetCache } from "../../../src/delivery/kinds/target-cache.js";

// The runtime's reconcile closes a broker destination's connection when the
// destination is deleted or its settings moved on, without waiting for its next call or idleness.
test("reconcile closes the publishers of deleted and changed destinations and keeps the current ones", async () => {
  const clock = new ManualClock(new Date("2026-11-28T10:00:00Z"));
  const closed: string[] = [];
  const publisherFor = (id: string, url: string): BrokerPublisher => ({
    publish: async () => ({ outcome: "success" }),
    publishRound: async (calls) => calls.map(() => ({ outcome: "success" })),
    close: async () => {
      closed.push(`${id} ${url}`);
    },
  });
  type Dest = DestinationCommon & { kind: "test"; url: string };
  const kind = createBrokerKind<{ url: string }, Dest>({
    clock,
    publishers: createTargetCache({ clock, idleMs: 60_000, create: (id, settings) => publisherFor(id, settings.url) }),
    settingsOf: (destination) => ({ url: destination.url }),
    targetOf: (settings) => settings.url,
    sourceIdOf: () => "s",
  });
  const destination = (id: string, revision: number, url: string): Dest =>
    ({
      id,
      revision,
      url,
      kind: "test",
      name: id,
      enabled: true,
      ordering: "none",
      drop_fields: [],
      transform: "",
      add_profile_id: false,
    }) as Dest;
  const job = (destinationId: string) =>
    ({
      destinationId,
      id: "1",
      messageId: "m",
      payload: '{"version":1,"type":"track","event":"E"}',
      receivedAt: clock.now(),
    }) as ClaimedDelivery;

  for (const id of ["kept", "deleted", "changed"]) await kind.deliver(job(id), destination(id, 1, `amqp://${id}`), "{}");
  expect(kind.openDestinations?.().sort()).toEqual(["changed", "deleted", "kept"]);

  kind.reconcile?.(
    new Map([
      ["kept", destination("kept", 1, "amqp://kept")],
      ["changed", destination("changed", 2, "amqp://new")],
    ]),
  );
  await Promise.resolve();
  expect(closed.sort()).toEqual(["changed amqp://changed", "deleted amqp://deleted"]);
  expect(kind.openDestinations?.()).toEqual(["kept"]);
  await kind.close();
  expect(closed).toContain("kept amqp://kept");
});
