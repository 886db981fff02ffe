import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { SourceFile } from "./layer-rules.js";

export const srcDir = new URL("../../src/", import.meta.url).pathname;

/**
 * The TypeScript files under `dir`, with paths relative to src/. The
 * console's browser app (src/console/app, bundled on its own) is left out
 * unless `withConsoleApp` is set; it is written in .ts and .tsx.
 */
export function sourceFiles(dir = srcDir, options: { withConsoleApp?: boolean } = {}): SourceFile[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      const isConsoleApp = entry.name === "app" && dir.endsWith("console");
      return isConsoleApp && !options.withConsoleApp ? [] : sourceFiles(full, options);
    }
    const isSource = entry.name.endsWith(".ts") || (options.withConsoleApp && entry.name.endsWith(".tsx"));
    return isSource ? [{ path: path.relative(srcDir, full), text: readFileSync(full, "utf8") }] : [];
  });
}
