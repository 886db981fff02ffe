import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

/** The part of esbuild this file uses (a development dependency: only loaded when running from sources). */
interface Esbuild {
  buildSync(options: Record<string, unknown>): { outputFiles: Array<{ text: string }> };
}

let fromSources: URL | undefined;

/**
 * The file a transform worker thread runs. From the build it is the compiled
 * transform-worker.js beside this file. From the TypeScript sources (vitest,
 * which compiles .ts for the main thread only: a worker thread loads plain
 * JavaScript) it is the worker's sources bundled here and now, once a
 * process, so that a test run after an edit runs the edited worker and
 * never a stale build in dist/.
 */
export function transformWorkerUrl(here: string = import.meta.url): URL {
  if (!here.endsWith(".ts")) return new URL("./transform-worker.js", here);
  fromSources ??= bundleWorkerSources(new URL("./transform-worker.ts", here));
  return fromSources;
}

/**
 * Bundles the worker and the modules it imports (packages stay imports)
 * into node_modules/.cache, from where its package imports resolve as the
 * sources' do. Written to a temporary name and renamed, so that test files
 * running side by side never read a half-written bundle.
 */
function bundleWorkerSources(entry: URL): URL {
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
  const dir = new URL("../../node_modules/.cache/waypost/", entry);
  mkdirSync(dir, { recursive: true });
  const target = new URL("transform-worker.mjs", dir);
  const temporary = new URL(`transform-worker.${process.pid}.${Date.now()}.tmp`, dir);
  writeFileSync(temporary, result.outputFiles[0]!.text);
  renameSync(temporary, target);
  return target;
}
