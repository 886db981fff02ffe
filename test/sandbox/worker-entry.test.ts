import { readFileSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, expect, test } from "vitest";
import { createTransformSandboxes } from "../../src/sandbox/transform-sandbox.js";
import { transformWorkerUrl } from "../../src/sandbox/worker-entry.js";

const workerSource = new URL("../../src/sandbox/transform-worker.ts", import.meta.url);
const hostSource = new URL("../../src/sandbox/sandbox-host.ts", import.meta.url);

/** The string literals of a source file, but for its imports, types and comments. */
const literalsOf = (file: URL) =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => !/^\s*(import|export .* from|} from|\/\/|\/?\*|(export )?type |\|)/.test(line))
    .flatMap((line) => [...line.matchAll(/`([^`$\\]{12,})`|"([^"\\]{12,})"/g)].map((m) => m[1] ?? m[2]));

test("run from the sources, the worker thread runs the sources' worker, not the build in dist/", () => {
  const url = transformWorkerUrl();
  expect(url.pathname).not.toContain("/dist/");
  const bundle = readFileSync(url, "utf8");
  // Bundled now, from what the sources say now: each message the worker and
  // its sandbox host write is in it, and the bundle is newer than them.
  const literals = [...literalsOf(workerSource), ...literalsOf(hostSource)];
  expect(literals.length).toBeGreaterThan(3);
  for (const literal of literals) expect(bundle).toContain(literal);
  expect(statSync(url).mtimeMs).toBeGreaterThanOrEqual(statSync(workerSource).mtimeMs);
});

test("from the build, the worker is the compiled file beside the module", () => {
  expect(fileURLToPath(transformWorkerUrl("file:///srv/waypost/dist/src/sandbox/worker-entry.js"))).toBe(
    "/srv/waypost/dist/src/sandbox/transform-worker.js",
  );
});

const sandboxes = createTransformSandboxes({ timeoutMs: 1000, memoryMb: 16 });
afterAll(() => sandboxes.close());

test("a transform runs in a worker started from the sources", async () => {
  const outcome = await sandboxes.run("k", "function transform(e) { e.seen = true; return e }", JSON.stringify({ type: "track" }));
  expect(outcome).toMatchObject({ kind: "send" });
  expect(JSON.parse((outcome as { body: string }).body)).toEqual({ type: "track", seen: true });
});
