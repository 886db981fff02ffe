// Builds the operator console (browser code under app/) into dist/console/:
// one hashed script, one hashed stylesheet and an index.html naming them.
// Everything is bundled, so the page needs no network access but its server.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const out = path.join(root, "dist/console");

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const result = await build({
  entryPoints: { app: path.join(here, "app/main.tsx") },
  bundle: true,
  format: "esm",
  target: "es2022",
  platform: "browser",
  minify: true,
  sourcemap: "linked",
  jsx: "automatic",
  jsxImportSource: "preact",
  tsconfig: path.join(here, "app/tsconfig.json"),
  entryNames: "assets/[name]-[hash]",
  outdir: out,
  metafile: true,
  legalComments: "linked",
  logLevel: "warning",
});

const outputs = Object.keys(result.metafile.outputs).map((file) => path.relative(out, path.resolve(root, file)));
const script = outputs.find((file) => file.endsWith(".js"));
const style = outputs.find((file) => file.endsWith(".css"));
if (!script || !style) throw new Error(`console build produced ${outputs.join(", ")}`);
const html = readFileSync(path.join(here, "app/index.html"), "utf8")
  .replace("{{script}}", `/console/${script}`)
  .replace("{{style}}", `/console/${style}`);
writeFileSync(path.join(out, "index.html"), html);
