import net from "node:net";
import { Writable } from "node:stream";
import { expect } from "vitest";
import { JobState } from "../../gen/waypost/v1/job_pb.js";
import { progressBar } from "../../src/cli/commands/job-progress.js";
import { runCli } from "../../src/cli/program.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";
import { cliEnv, startWaypost } from "./support.js";

// On a terminal the CLI draws a backfill's progress as a bar redrawn in place.
const test = testWith();

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

test("on a terminal, destinations backfill redraws one progress line, then prints the backfill", async ({ server }) => {
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
  const [started, progress, ...rest] = out.text().split("\n");
  // The job's id first, and how to follow it again.
  const backfillId = /^backfill (\S+) started; /.exec(started!)?.[1];
  expect(started).toContain(`(see it again: waypost backfills get ${backfillId} --wait)`);
  expect(rest.join("\n")).toMatch(new RegExp(`^backfill:\\s+${backfillId}$`, "m"));
  // Each redraw starts at the line's beginning and clears what was left of the last.
  expect(progress!.startsWith("\r[")).toBe(true);
  expect(progress!.endsWith(`\r[${"#".repeat(30)}] 100%  created 2, filtered 1 of 3 candidates\x1b[K`)).toBe(true);
  expect(rest.join("\n")).toMatch(/^state:\s+done$/m);
});

/**
 * The server as the CLI sees it, through a proxy that lets the first request
 * (the one starting the job) through and then is gone: every later request's
 * connection is cut and new ones refused, as when the server is killed.
 */
async function serverLostAfterFirstRequest(target: TestServer) {
  const port = Number(new URL(target.url).port);
  const sockets = new Set<net.Socket>();
  let requests = 0;
  let gone = false;
  const proxy = net.createServer((client) => {
    if (gone) return client.destroy();
    const upstream = net.connect(port, "127.0.0.1");
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => {});
    }
    client.on("data", (chunk: Buffer) => {
      requests += chunk.toString("latin1").match(/^POST /gm)?.length ?? 0;
      if (requests > 1) gone = true;
      if (gone) for (const s of sockets) s.destroy();
      else upstream.write(chunk);
    });
    upstream.pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(proxy.address() as net.AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => proxy.close(() => resolve())),
  };
}

test("the server lost while following a backfill: the job goes on, and the command to follow it again is printed", async ({ server }) => {
  const source = await server.createSource();
  const tracking = server.tracking(source.writeKey);
  for (const n of [1, 2, 3]) await tracking.track({ track: { userId: "u", event: "E", properties: { n } } });
  const destination = await server.createDestination({
    name: "lost",
    sourceIds: [source.id],
    webhooks: [{ url: "http://127.0.0.1:9/" }],
    enabled: false,
  });
  const lost = await serverLostAfterFirstRequest(server);
  try {
    const cli = startWaypost(["destinations", "backfill", destination.id, "--since", "1h"], cliEnv(server, { WAYPOST_URL: lost.url }));
    let stderr = "";
    cli.child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const started = await cli.waitForLine((line) => line.includes(" started; "));
    const id = /^backfill (\S+) started; /.exec(started)?.[1];
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(await cli.exited).toBe(1);
    expect(stderr).toContain(`lost the server while following backfill ${id}`);
    expect(stderr).toContain(
      `the job goes on in the server (a restarted server resumes it): follow it again with waypost backfills get ${id} --wait`,
    );
    // It did go on: the server, reached directly, has it.
    const { backfill } = await server.destinations.getBackfill({ id: id! });
    expect(backfill?.id).toBe(id);
  } finally {
    await lost.close();
  }
});
