import { Command } from "commander";
import { describe, expect, test } from "vitest";
import { commandModules, commandNameOf, modulesFor } from "../../src/cli/command-modules.js";
import type { Wire } from "../../src/cli/context.js";

const io = { stdout: process.stdout, stderr: process.stderr, env: {} };
const wire: Wire = () => async () => {};

describe("the CLI loads only the file of the command a line names", () => {
  test("each file registers exactly the names it is listed under, and no two files share a name", async () => {
    const seen: string[] = [];
    for (const module of commandModules) {
      const program = new Command("waypost");
      (await module.load())(program, wire, io);
      expect(program.commands.map((command) => command.name())).toEqual(module.names);
      seen.push(...module.names);
    }
    expect(new Set(seen).size).toBe(seen.length);
  });

  test("the command's name is the first word that is neither an option nor a program option's value", () => {
    expect(commandNameOf(["sources", "list"])).toBe("sources");
    expect(commandNameOf(["--url", "http://x", "--token", "t", "--json", "stats"])).toBe("stats");
    expect(commandNameOf(["--url=http://x", "deliveries", "get", "1"])).toBe("deliveries");
    expect(commandNameOf(["--", "send"])).toBe("send");
    expect(commandNameOf(["--help"])).toBeUndefined();
    expect(commandNameOf([])).toBeUndefined();
  });

  test("a named command loads its one file; help, a typo or no command loads them all", () => {
    expect(modulesFor(["sources", "list"]).map((module) => module.names)).toEqual([["sources"]]);
    expect(modulesFor(["restore", "f.gz"]).map((module) => module.names)).toEqual([["backup", "restore"]]);
    for (const line of [["--help"], ["help", "sources"], ["sourcs", "list"], []]) expect(modulesFor(line)).toBe(commandModules);
  });
});
