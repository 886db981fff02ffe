import { afterAll, expect } from "vitest";
import { createNotifier, type Notifier } from "../../../src/background/notifier.js";
import { systemClock } from "../../../src/clock.js";
import { createHookProcessor, notifyHookRequestStored, type HookProcessor } from "../../../src/ingest/hooks/hook-processor.js";
import { matcherOfRow } from "../../../src/delivery/kinds/registry.js";
import { createIngestor } from "../../../src/ingest/ingestor.js";
import { createLogger } from "../../../src/logger.js";
import { createTransformSandboxes, type TransformSandboxes } from "../../../src/sandbox/transform-sandbox.js";
import { hookRequestState, hookSettings, insertHookRequest, makeWebhookSource } from "../../helpers/hook-requests.js";
import { eventually } from "../../helpers/process.js";
import { testWith } from "../../helpers/fixtures.js";
import { singleNodeJobTable } from "../../../src/db/job-table/index.js";

// A server that processes nothing (role api) and a processor of the test's
// own that would not look again for an hour: only the NOTIFY wakes it.
let sandboxes: TransformSandboxes;
let processor: HookProcessor;
let notifier: Notifier;

const test = testWith({ server: { config: { role: "api" } } });
test.beforeAll(async ({ server }) => {
  sandboxes = createTransformSandboxes({ timeoutMs: 1_000, memoryMb: 32, workers: 1 });
  notifier = createNotifier({ connectionString: server.database.url, logger: createLogger("silent") });
  processor = createHookProcessor({
    pool: server.pool,
    notifier,
    clock: systemClock,
    logger: createLogger("silent"),
    ingestor: createIngestor({ pool: server.pool, jobTable: singleNodeJobTable, clock: systemClock, kindMatcher: matcherOfRow }),
    sandboxes,
    leaseMs: 10_000,
    pollMs: 3_600_000,
  });
  await processor.start();
  await processor.idle();
});
afterAll(async () => {
  await processor?.stop();
  await notifier?.close();
  sandboxes?.close();
});

test("a NOTIFY on waypost_hooks from another connection wakes the processor at once", async ({ server }) => {
  const { id: sourceId } = await server.createSource("hooks");
  await makeWebhookSource(server.pool, sourceId, hookSettings());
  const id = await insertHookRequest(server.pool, sourceId, { body: { a: 1 } });
  await notifyHookRequestStored(server.pool, sourceId);
  const state = await eventually(async () => {
    const row = await hookRequestState(server.pool, id);
    return row.status === "processed" && row;
  }, 15_000);
  expect(state.message_ids).toEqual([`hook-${id}-0`]);
});
