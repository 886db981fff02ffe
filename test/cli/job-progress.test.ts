import { Writable } from "node:stream";
import { afterAll, beforeAll, expect, test } from "vitest";
import { JobState } from "../../gen/waypost/v1/job_pb.js";
import { progressBar } from "../../src/cli/commands/job-progress.js";
import { runCli } from "../../src/cli/program.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

// On a terminal the CLI draws a backfill's progress as a bar redrawn in place.
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.stop();
});

/** A stdout that says it is a terminal, keeping what is written. */
function terminal() {
  let text = "";
  const stream = Object.assign(
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        text += chunk.toString();
        done();
      },
    }),
    { isTTY: true },
  );
  return { stream, text: () => text };
}

test("the bar shows the share done", () => {
  const bar = (done: bigint, total: bigint, state = JobState.RUNNING) => progressBar({ state, done, total, summary: "", error: "" });
  expect(bar(1n, 4n)).toBe(`[${"#".repeat(8)}${".".repeat(22)}]  25%`);
  expect(bar(0n, 0n, JobState.DONE)).toBe(`[${"#".repeat(30)}] 100%`);
  // Some candidates got a delivery elsewhere meanwhile: done is done.
  expect(bar(3n, 4n, JobState.DONE)).toBe(`[${"#".repeat(30)}] 100%`);
});

test("on a terminal, destinations backfill redraws one progress line, then prints the backfill", async () => {
  const source = await server.createSource();
  const tracking = server.tracking(source.writeKey);
  for (const total of [5, 500, 600]) await tracking.track({ track: { userId: "u", event: "E", properties: { total } } });
  const destination = await server.createDestination({
    name: "tty",
    sourceIds: [source.id],
    webhooks: [{ url: "http://127.0.0.1:9/" }],
    enabled: false,
    filter: { "properties.total": { $gt: 100 } },
  });
  const out = terminal();
  const err = terminal();
  const code = await runCli(
    ["destinations", "backfill", destination.id, "--since", "1h", "--url", server.url, "--token", server.adminToken],
    { stdout: out.stream, stderr: err.stream, env: {} },
    new AbortController().signal,
  );
  expect(code, err.text()).toBe(0);
  const [progress, ...rest] = out.text().split("\n");
  // Each redraw starts at the line's beginning and clears what was left of the last.
  expect(progress!.startsWith("\r[")).toBe(true);
  expect(progress!.endsWith(`\r[${"#".repeat(30)}] 100%  created 2, filtered 1 of 3 candidates\x1b[K`)).toBe(true);
  expect(rest.join("\n")).toMatch(/^state:\s+done$/m);
});
