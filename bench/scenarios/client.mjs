// @ts-check
import { run as runClientBench } from "../client-track.mjs";
import { createSourceAndDestination } from "../lib/admin.mjs";
import { startService } from "../lib/service.mjs";

/**
 * The batching client: the cost of one track() on the caller's
 * thread against same-run baselines, and calls/s end to end from one
 * process into an API process. Lines carry "bench":"client-track".
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, quick: boolean }} options
 */
export async function clientScenario({ db, sink, quick }) {
  const service = await startService(db.url, { WAYPOST_ROLE: "api" });
  const { source } = await createSourceAndDestination(service.url, `${sink.url}/ok`, { name: "client" });
  await runClientBench({
    endpoint: service.url,
    writeKey: source.writeKey,
    calls: quick ? 10_000 : 50_000,
    ...(quick ? { rounds: 30, amortisedOps: 10_000 } : {}),
  });
  await service.stop();
}
