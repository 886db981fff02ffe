import { describe, expect, it } from "vitest";
import { createIngestAdmission } from "../../src/http/ingest-admission.js";
import { post } from "../compat/support.js";
import { testWith } from "../helpers/fixtures.js";

// Turns for ingest work: at most `slots` inside, the rest in arrival order,
// a turn ended once however often its end is called.

describe("ingest admission", () => {
  it("lets `slots` in at once and the rest in arrival order as turns end", async () => {
    const admission = createIngestAdmission({ slots: 2 });
    const order: number[] = [];
    const first = await admission.enter();
    const second = await admission.enter();
    const waiting = [3, 4, 5].map(async (n) => {
      const leave = await admission.enter();
      order.push(n);
      return leave;
    });
    await Promise.resolve();
    expect([admission.inside, admission.waiting]).toEqual([2, 3]);
    expect(order).toEqual([]);

    first();
    first(); // a second end of the same turn frees nothing more
    const third = await waiting[0]!;
    expect(order).toEqual([3]);
    expect([admission.inside, admission.waiting]).toEqual([2, 2]);

    second();
    third();
    const [, fourth, fifth] = await Promise.all(waiting);
    expect(order).toEqual([3, 4, 5]);
    fourth!();
    fifth!();
    expect([admission.inside, admission.waiting]).toEqual([0, 0]);
  });

  it("with no limit (0), every request goes in at once", async () => {
    const admission = createIngestAdmission({ slots: 0 });
    const turns = await Promise.all(Array.from({ length: 50 }, () => admission.enter()));
    expect([admission.inside, admission.waiting]).toEqual([50, 0]);
    for (const leave of turns) leave();
    expect(admission.inside).toBe(0);
  });
});

// One turn for the whole process: Batch RPCs and /v1 batches sent at once all
// get in, one after another, every call stored once; a refused batch ends
// its turn too (the next one still gets in), as does a call refused in a Batch.
const test = testWith({ server: { config: { ingestConcurrency: 1 } } });

test("with one turn, 20 Batch RPCs and 20 /v1 batches at once, and bad ones among them, are each answered and stored once", async ({
  server,
}) => {
  const source = await server.createSource();
  const tracking = server.tracking(source.writeKey);
  const batch = (n: number) =>
    Array.from({ length: 10 }, (_, i) => ({
      type: { case: "track" as const, value: { messageId: `rpc-${n}-${i}`, userId: `u${i}`, event: "Sent" } },
    }));
  const answers = await Promise.all([
    ...Array.from({ length: 20 }, (_, n) => tracking.batch({ batch: batch(n) })),
    ...Array.from({ length: 20 }, (_, n) =>
      post(
        server,
        "/v1/batch",
        { batch: Array.from({ length: 10 }, (_, i) => ({ type: "track", messageId: `v1-${n}-${i}`, userId: `u${i}`, event: "Sent" })) },
        { writeKey: source.writeKey },
      ),
    ),
    post(server, "/v1/batch", "{not json", { writeKey: source.writeKey }),
    tracking.batch({ batch: [{ type: { case: "track", value: { messageId: "no-user", event: "Sent" } } }] }),
    // A body that does not decode: answered by Connect before the handler runs.
    fetch(`${server.url}/waypost.v1.TrackingService/Batch`, {
      method: "POST",
      headers: { authorization: `Bearer ${source.writeKey}`, "content-type": "application/json" },
      body: '{"calls": []}',
    }),
    ...Array.from({ length: 3 }, (_, n) => tracking.track({ track: { messageId: `after-${n}`, userId: "u", event: "Sent" } })),
  ]);
  const statuses = answers.slice(20, 41).map((answer) => (answer as { status: number }).status);
  expect(statuses.slice(0, 20)).toEqual(Array(20).fill(200));
  expect(statuses[20]).toBe(400);
  expect((answers[41] as { rejectedCount: number }).rejectedCount).toBe(1);
  expect((answers[42] as Response).status).toBe(400);
  const { rows } = await server.pool.query<{ n: number; distinct: number }>(
    "SELECT count(*)::int AS n, count(DISTINCT message_id)::int AS distinct FROM messages WHERE source_id = $1",
    [source.id],
  );
  expect(rows[0]).toEqual({ n: 403, distinct: 403 });
});
