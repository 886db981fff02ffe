import { expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";
import { cliEnv, waypost } from "./support.js";

/** A webhook's batch settings through `waypost destinations`: flags in, what the server stored out. */
let env: NodeJS.ProcessEnv;

const test = testWith();
test.beforeAll(async ({ server }) => {
  env = cliEnv(server);
});

const stored = async (server: TestServer, id: string) => (await server.destinations.getDestination({ id })).destination!;
const url = "https://example.com/batched";

test("--batch-max-calls, --batch-max-bytes, --batch-max-wait-ms set, change and remove every URL's batch; get shows it", async ({
  server,
}) => {
  const created = await waypost(
    [
      "destinations",
      "create",
      "--name",
      "batched",
      "--url",
      url,
      "--header",
      "X-Team:a",
      "--batch-max-calls",
      "50",
      "--batch-max-wait-ms",
      "250",
    ],
    env,
  );
  expect(created.code, created.stderr).toBe(0);
  const id = /^id:\s+(\S+)$/m.exec(created.stdout)![1]!;
  expect((await stored(server, id)).webhooks[0]).toMatchObject({
    url,
    headers: { "X-Team": "a" },
    batch: { maxCalls: 50, maxBytes: 262_144, maxWaitMs: 250 },
  });
  const got = await waypost(["destinations", "get", id], env);
  expect(got.stdout).toMatch(new RegExp(`^batch ${url}:\\s+50 calls, 262144 bytes, 250 ms wait$`, "m"));

  // Alone, a --batch flag keeps the URLs, headers and the other batch settings.
  const bytes = await waypost(["destinations", "update", id, "--batch-max-bytes", "4096"], env);
  expect(bytes.code, bytes.stderr).toBe(0);
  expect((await stored(server, id)).webhooks[0]).toMatchObject({
    url,
    headers: { "X-Team": "a" },
    batch: { maxCalls: 50, maxBytes: 4096, maxWaitMs: 250 },
  });
  // --header alone keeps the batch.
  expect((await waypost(["destinations", "update", id, "--header", "X-Team:b"], env)).code).toBe(0);
  expect((await stored(server, id)).webhooks[0]).toMatchObject({ headers: { "X-Team": "b" }, batch: { maxCalls: 50, maxBytes: 4096 } });

  const off = await waypost(["destinations", "update", id, "--batch-max-calls", "0"], env);
  expect(off.code, off.stderr).toBe(0);
  expect((await stored(server, id)).webhooks[0]!.batch).toBeUndefined();
  expect((await waypost(["destinations", "get", id], env)).stdout).not.toMatch(/^batch /m);
});

test("bad --batch flags: a usage error (exit 2) before sending; out of range, the server's error naming the field (exit 1)", async ({
  server,
}) => {
  const base = ["destinations", "create", "--name", "bad", "--url", url];
  const [words, alone, range] = await Promise.all([
    waypost([...base, "--batch-max-calls", "lots"], env),
    waypost([...base, "--batch-max-wait-ms", "10"], env),
    waypost([...base, "--batch-max-calls", "1"], env),
  ]);
  expect(words.code).toBe(2);
  expect(words.stderr).toContain('--batch-max-calls: "lots" is not a whole number');
  expect(alone.code).toBe(2);
  expect(alone.stderr).toContain("need --batch-max-calls");
  expect(range.code).toBe(1);
  expect(range.stderr).toMatch(/invalid_argument: destination\.webhooks\[0\]\.batch\.maxCalls: must be from 2 to 1000, got 1/);
  expect((await server.destinations.listDestinations({})).destinations.filter((d) => d.name === "bad")).toEqual([]);
});
