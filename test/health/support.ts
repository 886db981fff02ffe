import type { CircuitConfig, Config } from "../../src/config.js";
import { defaultRetrySchedule } from "../../src/config.js";
import type { Receiver } from "../helpers/receiver.js";
import type { TestServer } from "../helpers/server.js";

/** Small numbers, so a test opens a circuit in three calls. */
export const testCircuit: CircuitConfig = {
  failures: 3,
  minSpanMs: 60_000,
  cooldownMs: 30_000,
  maxCooldownMs: 120_000,
  throttleAfter429s: 3,
};

/** Retries ten minutes apart and no jitter: they stay out of the way of the probes being counted. */
export const slowRetries = { ...defaultRetrySchedule, initialDelayMs: 600_000, jitter: 0 };

/**
 * The loop claims only when woken (a new call's NOTIFY, a poke, a closed
 * circuit), never on its own timer: what it sends follows from the test's
 * steps alone.
 */
export function healthConfig(extra: Partial<Omit<Config, "delivery">> = {}) {
  return { ...extra, delivery: { circuit: testCircuit, retry: slowRetries, pollIntervalMs: 60_000 } };
}

/**
 * One claim of the delivery loop that started after this call (so it saw
 * everything committed before), then everything it took finished and
 * recorded: "nothing was sent" is checked after a claim that could have.
 */
export async function claimRound(server: TestServer): Promise<void> {
  const loop = server.waypost.delivery!;
  const mark = performance.now();
  const claimed = new Promise<void>((resolve) => {
    const off = loop.events.on("claimed", (claim) => {
      if (claim.startedAt < mark) return;
      off();
      resolve();
    });
  });
  loop.poke();
  await claimed;
  await loop.settle();
}

/** A track call through the API, once its deliveries are recorded by this server. */
export async function trackAndRecord(server: TestServer, writeKey: string, event: string, count = 1): Promise<string> {
  const done = server.waitForDeliveries(count, ["delivered", "retrying", "failed", "expired"]);
  const { messageId } = await server.tracking(writeKey).track({ track: { userId: "u", event } });
  await done;
  return messageId;
}

export async function statuses(server: TestServer, destinationId: string): Promise<Record<string, number>> {
  const result = await server.pool.query<{ status: string; n: number }>(
    "SELECT status, count(*)::int AS n FROM deliveries WHERE destination_id = $1 GROUP BY status",
    [destinationId],
  );
  return Object.fromEntries(result.rows.map((r) => [r.status, r.n]));
}

export async function circuitGauge(server: TestServer, destinationId: string): Promise<number | undefined> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const match = text.match(new RegExp(`waypost_destination_circuit_open\\{destination_id="${destinationId}"\\} (\\d+)`));
  return match ? Number(match[1]) : undefined;
}

/** The destination as the API reports it (its health fields included). */
export async function destinationHealth(server: TestServer, id: string) {
  return (await server.destinations.getDestination({ id })).destination!;
}

/** The operator events a receiver got, with their parsed bodies. */
export function operatorEventsAt(operator: Receiver) {
  return operator.requests.map((r) => ({ request: r, body: JSON.parse(r.body) as { type: string; data: Record<string, unknown> } }));
}
