import { expect, test } from "vitest";
import { type BrokerLink, createBrokerConnection } from "../../../src/delivery/kinds/broker-connection.js";
import type { BrokerCall, PublishResult } from "../../../src/delivery/kinds/broker-publisher.js";

interface FakeConnection extends BrokerLink {
  id: number;
  lose(cause: string): void;
}

const call = (messageId: string): BrokerCall => ({
  messageId,
  type: "track",
  sourceId: "s",
  destinationId: "d",
  body: "{}",
  timestamp: new Date("2026-12-06T10:00:00Z"),
});

/**
 * The shell over fake connections: `opens` answers each open in turn (a
 * connection, or an error to throw); a round publishes "ok on <id>" for
 * each call, or waits for `hold` when set.
 */
function setup(opens: Array<"ok" | Error>) {
  const log: string[] = [];
  let opened = 0;
  let hold: Promise<void> | undefined;
  const connections: FakeConnection[] = [];
  const publisher = createBrokerConnection<FakeConnection>({
    async open(onLost) {
      const answer = opens[opened++] ?? "ok";
      log.push(`open ${opened}`);
      if (answer instanceof Error) throw answer;
      const connection: FakeConnection = {
        id: opened,
        lost: undefined,
        lose(cause) {
          connection.lost = cause;
          onLost();
        },
      };
      connections.push(connection);
      return connection;
    },
    async end(connection) {
      log.push(`end ${connection.id}`);
    },
    fail: (cause): PublishResult => ({ outcome: "retryable", error: `fake: ${cause}` }),
    where: "fake:1",
    async publishRound(calls, connect) {
      const { connection, failure } = await connect();
      if (failure) return calls.map(() => failure);
      await hold;
      if (calls.some((c) => c.messageId === "throw")) throw new Error("unforeseen");
      return calls.map((): PublishResult => ({ outcome: "success", error: `on ${connection.id}` }));
    },
  });
  return { publisher, log, connections, holdUntil: (until: Promise<void>) => (hold = until) };
}

test("the connection opens on the first round and serves the rounds after it, concurrent ones too", async () => {
  const { publisher, log } = setup(["ok"]);
  const [a, b] = await Promise.all([publisher.publish(call("a")), publisher.publishRound([call("b"), call("c")])]);
  expect(a).toEqual({ outcome: "success", error: "on 1" });
  expect(b.map((r) => r.error)).toEqual(["on 1", "on 1"]);
  expect(log).toEqual(["open 1"]);
});

test("a failed open fails the round naming where and why, and is forgotten: the next round opens again", async () => {
  const { publisher, log } = setup([new Error("ECONNREFUSED"), "ok"]);
  expect(await publisher.publishRound([call("a"), call("b")])).toEqual([
    { outcome: "retryable", error: "fake: cannot connect to fake:1: ECONNREFUSED" },
    { outcome: "retryable", error: "fake: cannot connect to fake:1: ECONNREFUSED" },
  ]);
  expect(await publisher.publish(call("c"))).toEqual({ outcome: "success", error: "on 2" });
  expect(log).toEqual(["open 1", "open 2"]);
});

test("a connection the broker drops is forgotten: the next round opens a new one", async () => {
  const { publisher, log, connections } = setup(["ok", "ok"]);
  expect((await publisher.publish(call("a"))).error).toBe("on 1");
  connections[0]!.lose("socket closed");
  expect((await publisher.publish(call("b"))).error).toBe("on 2");
  expect(log).toEqual(["open 1", "open 2"]);
});

test("a round that throws fails each of its calls naming the cause, and never rejects", async () => {
  const { publisher } = setup(["ok"]);
  expect(await publisher.publishRound([call("throw"), call("b")])).toEqual([
    { outcome: "retryable", error: "fake: unforeseen" },
    { outcome: "retryable", error: "fake: unforeseen" },
  ]);
});

test("close refuses new rounds, waits for those in flight, then ends the connection once", async () => {
  const { publisher, log, holdUntil } = setup(["ok"]);
  await publisher.publish(call("warm"));
  let release: () => void = () => {};
  holdUntil(new Promise<void>((resolve) => (release = resolve)));
  const inFlight = publisher.publish(call("a"));
  let closed = false;
  const closing = publisher.close().then(() => {
    closed = true;
  });
  expect(await publisher.publish(call("late"))).toEqual({
    outcome: "retryable",
    error: "fake: publisher closed (the destination changed or the process stops)",
  });
  await new Promise((resolve) => setImmediate(resolve));
  expect(closed).toBe(false);
  expect(log).toEqual(["open 1"]);
  release();
  expect(await inFlight).toEqual({ outcome: "success", error: "on 1" });
  await closing;
  await publisher.close();
  expect(log).toEqual(["open 1", "end 1"]);
});
