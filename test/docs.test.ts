import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

// The repository stands alone: its code, tests and docs point to its own
// docs (docs/api.md, docs/webhooks.md), never to an outside specification.

const root = fileURLToPath(new URL("..", import.meta.url));
// Built from parts, so that this file does not match itself.
const word = ["SP", "EC"].join("");
const citation = new RegExp(`${word} section|${word}\\.md|${word} §`);

function files(dir: string): string[] {
  if (!existsSync(dir)) return [];
  if (statSync(dir).isFile()) return [dir];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.name === "node_modules" || entry.name === "dist" ? [] : files(path.join(dir, entry.name)),
  );
}

test("no file in src/, test/, docs/, packages/ or the README cites an outside spec", () => {
  const checked = ["src", "test", "docs", "packages", "bench", "README.md"].flatMap((part) => files(path.join(root, part)));
  expect(checked.length).toBeGreaterThan(100);
  const citing = checked
    .map((file) => path.relative(root, file).split(path.sep).join("/"))
    .filter((file) => citation.test(readFileSync(path.join(root, file), "utf8")));
  expect(citing).toEqual([]);
});

test("the docs the code points to exist, with the anchors it names", () => {
  const headings = new Map<string, Set<string>>();
  for (const page of ["api.md", "webhooks.md"]) {
    const text = readFileSync(path.join(root, "docs", page), "utf8");
    const anchors = [...text.matchAll(/^#+ (.+)$/gm)].map((m) =>
      m[1]!
        .toLowerCase()
        .replace(/[^a-z0-9 _-]/g, "")
        .trim()
        .replace(/ /g, "-"),
    );
    headings.set(page, new Set(anchors));
  }
  const pointers = ["src", "test", "docs", "README.md"]
    .flatMap((part) => files(path.join(root, part)))
    .flatMap((file) => [
      ...readFileSync(file, "utf8").matchAll(/docs\/(api|webhooks)\.md#([a-z0-9-]+)|\((api|webhooks)\.md#([a-z0-9-]+)\)/g),
    ])
    .map((m) => ({ page: `${m[1] ?? m[3]}.md`, anchor: m[2] ?? m[4]! }));
  expect(pointers.length).toBeGreaterThan(10);
  const broken = pointers.filter(({ page, anchor }) => !headings.get(page)!.has(anchor)).map(({ page, anchor }) => `${page}#${anchor}`);
  expect([...new Set(broken)]).toEqual([]);
});

/** The anchor a heading gets on GitHub, near enough for the headings these pages use. */
function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .trim()
    .replace(/ /g, "-");
}

function markdownLinks(text: string): string[] {
  // Fenced code is not prose: a `[x](y)` there is code.
  const prose = text.replace(/```[\s\S]*?```/g, "");
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
}

const docPages = readdirSync(path.join(root, "docs")).filter((name) => name.endsWith(".md"));

test("the docs never point back into the README: every link from docs/*.md goes to a docs page or the code", () => {
  expect(docPages.length).toBeGreaterThan(10);
  const readme = path.join(root, "README.md");
  const back = docPages.flatMap((page) => {
    const text = readFileSync(path.join(root, "docs", page), "utf8");
    const links = markdownLinks(text)
      .filter((target) => !/^[a-z]+:/.test(target))
      .filter((target) => path.resolve(root, "docs", target.split("#")[0]!) === readme)
      .map((target) => `${page}: link to ${target}`);
    // Prose too ("see the README's ..."); other folders' READMEs (bench/README.md) are fine.
    const mentions = [...text.matchAll(/(?<![\w/.-])README(?:\.md|'s)|\bthe README\b/g)].map((m) => `${page}: "${m[0]}"`);
    return [...links, ...mentions];
  });
  expect(back).toEqual([]);
});

test("every relative link in the README and docs/*.md reaches a file, and its anchor a heading there", () => {
  const sources = ["README.md", ...docPages.map((page) => `docs/${page}`)];
  const broken = sources.flatMap((source) =>
    markdownLinks(readFileSync(path.join(root, source), "utf8"))
      .filter((target) => !/^[a-z]+:/.test(target))
      .flatMap((target) => {
        const [file, anchor] = target.split("#");
        const resolved = file ? path.resolve(root, path.dirname(source), file) : path.join(root, source);
        if (!existsSync(resolved)) return [`${source}: ${target} (no such file)`];
        if (!anchor || !resolved.endsWith(".md")) return [];
        const text = readFileSync(resolved, "utf8").replace(/```[\s\S]*?```/g, "");
        const anchors = new Set([...text.matchAll(/^#+ (.+)$/gm)].map((m) => anchorOf(m[1]!)));
        return anchors.has(anchor) ? [] : [`${source}: ${target} (no such heading)`];
      }),
  );
  expect(broken).toEqual([]);
});

test("the docs' client install line is the client README's Node 20 line (one copy of Connect)", () => {
  const command = /npm install \/path\/to\/waypost-client[^\n]*\\\n[^\n]*/;
  const readme = command.exec(readFileSync(path.join(root, "packages/client/README.md"), "utf8"));
  expect(readme?.[0]).toContain("@connectrpc/connect@~2.1");
  const docs = readFileSync(path.join(root, "docs/client.md"), "utf8");
  expect(docs).toContain(readme![0]);
});

test("docs/README.md lists every page of docs/ once, in a group, and no page that is gone", () => {
  const index = readFileSync(path.join(root, "docs", "README.md"), "utf8");
  const listed = [...index.matchAll(/^\| \[([\w-]+\.md)\]\(\1\) \|/gm)].map((match) => match[1]!);
  const pages = readdirSync(path.join(root, "docs"))
    .filter((name) => name.endsWith(".md") && name !== "README.md")
    .sort();
  expect([...listed].sort()).toEqual(pages);
  expect(new Set(listed).size).toBe(listed.length);
  const groups = [...index.matchAll(/^## (.+)$/gm)].map((match) => match[1]);
  expect(groups).toEqual(["Calls in", "Destinations", "Seeing what happened", "Running it", "Contributing"]);
});
