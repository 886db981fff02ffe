import { createHash } from "node:crypto";
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

/** The part of esbuild this file uses (a development dependency: only loaded when running from sources). */
interface Esbuild {
  buildSync(options: Record<string, unknown>): { outputFiles: Array<{ text: string }> };
}

const fromSources = new Map<string, URL>();

/**
 * The file a worker thread runs: `name` (a module without its extension)
 * beside the module at `here` (the caller's import.meta.url). From the
 * build it is the compiled `name.js`. From the TypeScript sources (vitest,
 * which compiles .ts for the main thread only: a worker thread loads plain
 * JavaScript) it is the worker's sources bundled here and now, once a
 * process, so that a test run after an edit runs the edited worker and
 * never a stale build in dist/.
 */
export function workerUrl(name: string, here: string): URL {
  if (!here.endsWith(".ts")) return new URL(`./${name}.js`, here);
  const entry = new URL(`./${name}.ts`, here);
  let bundled = fromSources.get(entry.href);
  if (!bundled) {
    bundled = bundleWorkerSources(entry, name);
    fromSources.set(entry.href, bundled);
  }
  return bundled;
}

/** The transform sandboxes' worker (transform-worker.ts). */
export function transformWorkerUrl(here: string = import.meta.url): URL {
  return workerUrl("transform-worker", here);
}

/**
 * Bundles the worker and the modules it imports (packages stay imports)
 * into node_modules/.cache, from where its package imports resolve as the
 * sources' do. Named after the checkout it comes from (worktrees may share
 * one node_modules) and written to a temporary name and renamed, so that
 * test files running side by side never read a half-written bundle or
 * another checkout's.
 */
function bundleWorkerSources(entry: URL, name: string): URL {
  const esbuild = createRequire(import.meta.url)("esbuild") as Esbuild;
  const result = esbuild.buildSync({
    entryPoints: [fileURLToPath(entry)],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    write: false,
  });
  const dir = new URL("../../node_modules/.cache/waypost/", import.meta.url);
  mkdirSync(dir, { recursive: true });
  const checkout = createHash("sha256").update(fileURLToPath(entry)).digest("hex").slice(0, 12);
  const target = new URL(`${name}.${checkout}.mjs`, dir);
  const temporary = new URL(`${name}.${process.pid}.${Date.now()}.tmp`, dir);
  writeFileSync(temporary, result.outputFiles[0]!.text);
  renameSync(temporary, target);
  return target;
}
