import path from "node:path";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import { callLimits, maxRequestBytes } from "../../packages/client/src/index.js";
import { limits } from "../../src/ingest/limits.js";

/**
 * The client's limits are its own copies (it must not import server code),
 * pinned here to the server's, so one cannot change without the other.
 */
const root = path.resolve(import.meta.dirname, "../..");

describe("client limits match the server's", () => {
  it("32 KB per call, 500 KB per request, id and identifier lengths", () => {
    expect(callLimits.maxCallBytes).toBe(limits.maxCallBytes);
    expect(maxRequestBytes).toBe(limits.maxRequestBytes);
    expect(callLimits.maxMessageIdLength).toBe(limits.maxMessageIdLength);
    expect(callLimits.maxIdentifierLength).toBe(limits.maxIdentifierLength);
  });

  it.each(["index.ts", "browser.ts"])("the package's %s reaches only its own sources and gen/", async (entry) => {
    const result = await build({
      entryPoints: [path.join(root, "packages/client/src", entry)],
      bundle: true,
      platform: "node",
      format: "esm",
      packages: "external",
      metafile: true,
      write: false,
      logLevel: "silent",
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.length).toBeGreaterThan(5);
    expect(inputs.filter((i) => !i.startsWith("packages/client/src/") && !i.startsWith("gen/waypost/v1/"))).toEqual([]);
  });
});
