import { mkdtempSync } from "node:fs";
import path from "node:path";
import { expect } from "vitest";
import { DestinationKind } from "../../../../gen/waypost/v1/destination_pb.js";
import { createObjectStore } from "../../../../src/lake/object-store.js";
import { downloadObjects, readLakeFiles } from "../../../helpers/duckdb-read.js";
import { testWith } from "../../../helpers/fixtures.js";
import { eventually } from "../../../helpers/process.js";
import { useS3Server } from "../../../helpers/s3-server.js";
import type { TestServer } from "../../../helpers/server.js";
import { deliveredOnLog, onTheLog, trackCall, workerProcesses } from "../../call-log/log-support.js";

// A worker killed with SIGKILL while its upload is in flight: the object is
// stored after it died (or never), its cursor never moved, and the next
// holder writes the same calls again under the same keys. Each call ends up
// in exactly one file. The API server ingests; worker processes deliver.
const test = testWith({ server: { config: { role: "api" } } });
const workers = workerProcesses(test);
const lake = useS3Server(test, "waypost-lake-killed");

// Short leases: the survivor takes the cursor over a second after the kill. No instance metadata for the AWS SDK.
const workerEnv = { WAYPOST_LEASE_MS: "1000", WAYPOST_POLL_INTERVAL_MS: "100", AWS_EC2_METADATA_DISABLED: "true" };
const total = 300;

async function lakeWithCalls(server: TestServer, prefix: string) {
  const source = await server.createSource();
  const destination = await server.createDestination({
    name: `lake-${prefix}`,
    sourceIds: [source.id],
    kind: DestinationKind.LAKE,
    lake: {
      url: `s3://lake/${prefix}`,
      endpoint: lake.s3.endpoint,
      accessKeyId: lake.s3.accessKeyId,
      secretAccessKey: lake.s3.secretAccessKey,
      flushSeconds: 1,
    },
  });
  const ids = Array.from({ length: total }, (_, i) => `${prefix}-${i}`);
  await server.tracking(source.writeKey).batch({ batch: ids.map((id) => trackCall(id)) });
  return { destination, ids };
}

/** Every id in the lake's `tracks` files under `prefix`, as DuckDB reads them, with how often each is there. */
async function idsInLake(prefix: string): Promise<Map<string, number>> {
  const store = createObjectStore({
    url: "s3://lake",
    endpoint: lake.s3.endpoint,
    accessKeyId: lake.s3.accessKeyId,
    secretAccessKey: lake.s3.secretAccessKey,
  });
  try {
    const keys = (await store.list(`${prefix}/tracks/`)).map((o) => o.key);
    const files = await downloadObjects(store, keys, mkdtempSync(path.join(lake.scratch, "read-")));
    const counts = new Map<string, number>();
    for (const row of (await readLakeFiles(files)).rows) counts.set(String(row.id), (counts.get(String(row.id)) ?? 0) + 1);
    return counts;
  } finally {
    await store.close();
  }
}

for (const fate of ["store", "drop"] as const) {
  test(`killed mid-upload (the object ${fate === "store" ? "stored after the kill" : "never stored"}): every call in the lake exactly once`, async ({
    server,
  }) => {
    const gate = lake.s3.holdPuts();
    const { destination, ids } = await lakeWithCalls(server, `killed-${fate}`);
    const first = await workers.start(workerEnv);
    await onTheLog(server.pool, destination.id);
    await gate.held;
    first.child.kill("SIGKILL");
    expect(await first.exited).toBe("SIGKILL");
    gate.release(fate);
    expect(await deliveredOnLog(server.pool, destination.id)).toBe(0);

    await workers.start(workerEnv);
    await eventually(async () => (await deliveredOnLog(server.pool, destination.id)) === total);
    const counts = await idsInLake(`killed-${fate}`);
    expect([...counts.keys()].sort()).toEqual([...ids].sort());
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
  });
}
