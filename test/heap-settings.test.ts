import { readFileSync } from "node:fs";
import { expect } from "vitest";
import { semiSpaceArgs } from "../src/heap-settings.js";
import { testWith } from "./helpers/fixtures.js";
import { startServiceProcess } from "./helpers/process.js";

const test = testWith();

/** The command line of a running process, as the kernel has it. */
const commandLine = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);

test("node dist/server.js runs, under its own pid, with the young generation capped (16 MB a semi-space unless told)", async ({
  database,
}) => {
  const service = await startServiceProcess(database.url);
  try {
    const args = commandLine(service.child.pid!);
    expect(args).toContain("--max-semi-space-size=16");
    expect(args.at(-1)).toMatch(/dist\/server\.js$/);
  } finally {
    service.child.kill("SIGTERM");
    await service.exited;
  }
  const off = await startServiceProcess(database.url, { WAYPOST_SEMI_SPACE_MB: "0" });
  try {
    expect(commandLine(off.child.pid!).some((a) => a.startsWith("--max-semi-space-size"))).toBe(false);
  } finally {
    off.child.kill("SIGTERM");
    await off.exited;
  }
});

test("the cap's options: the setting, none when it is 0 or not a number, the operator's own flag first", () => {
  expect(semiSpaceArgs({}, [])).toEqual(["--max-semi-space-size=16"]);
  expect(semiSpaceArgs({ WAYPOST_SEMI_SPACE_MB: "8" }, [])).toEqual(["--max-semi-space-size=8"]);
  expect(semiSpaceArgs({ WAYPOST_SEMI_SPACE_MB: "0" }, [])).toBeUndefined();
  expect(semiSpaceArgs({ WAYPOST_SEMI_SPACE_MB: "lots" }, [])).toBeUndefined();
  expect(semiSpaceArgs({ WAYPOST_SEMI_SPACE_MB: "5000" }, [])).toBeUndefined();
  expect(semiSpaceArgs({ NODE_OPTIONS: "--enable-source-maps --max-semi-space-size=4" }, [])).toBeUndefined();
  expect(semiSpaceArgs({}, ["--max-semi-space-size=32"])).toBeUndefined();
});
