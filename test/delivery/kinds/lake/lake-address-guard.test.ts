import { afterAll, beforeAll, expect, test } from "vitest";
import { guardedLookup } from "../../../../src/delivery/kinds/broker-address.js";
import { createObjectStore } from "../../../../src/lake/object-store.js";
import { createAddressGuard } from "../../../../src/outbound/address-guard.js";
import { isolateAwsEnvironment } from "../../../helpers/aws-env.js";
import { type S3Server, startS3Server } from "../../../helpers/s3-server.js";

// The lake kind resolves its endpoint's name through the outbound address
// guard (a name is judged on what it resolves to, as a webhook's is): a name
// that resolves to loopback reaches nothing unless private addresses are allowed.
let s3: S3Server;
let restoreEnv: () => void;
beforeAll(async () => {
  restoreEnv = isolateAwsEnvironment();
  s3 = await startS3Server({ buckets: ["lake"] });
});
afterAll(async () => {
  await s3?.close();
  restoreEnv?.();
});

function storeAt(allowPrivate: boolean) {
  const port = new URL(s3.endpoint).port;
  return createObjectStore({
    url: "s3://lake",
    // A name, not a literal: the guard sees the addresses it resolves to.
    endpoint: `http://localhost:${port}`,
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
    maxAttempts: 1,
    lookup: guardedLookup(createAddressGuard({ allowPrivate, allowedCidrs: [] })),
  });
}

test("an endpoint whose name resolves to a private address is refused before a connection opens", async () => {
  const refused = storeAt(false);
  const before = s3.requests.length;
  try {
    await expect(refused.put("guarded/one.txt", Buffer.from("x"), "text/plain")).rejects.toThrow(/localhost resolves to/);
  } finally {
    await refused.close();
  }
  expect(s3.requests.length).toBe(before);

  const allowed = storeAt(true);
  try {
    await allowed.put("guarded/one.txt", Buffer.from("x"), "text/plain");
    expect((await allowed.get("guarded/one.txt")).toString()).toBe("x");
  } finally {
    await allowed.close();
  }
});
