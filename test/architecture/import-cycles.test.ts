import { describe, expect, test } from "vitest";
import { importCycles, importGraph } from "./import-cycles.js";
import { sourceFiles } from "./source-files.js";

// No file of src/ (the console's browser app included) may reach itself
// through imports, type-only imports included: a type two files share goes
// in a file of its own that both import. The layer test keeps modules from
// importing upward; this one keeps the files inside a folder from circling.

const files = sourceFiles(undefined, { withConsoleApp: true });

test("the test sees the files and their imports, the console app's .tsx included", () => {
  const graph = importGraph(files);
  expect(graph.get("console/app/app.tsx")?.length).toBeGreaterThan(3);
  expect(graph.get("db/job-table/complete.ts")?.length).toBeGreaterThan(0);
});

test("no file of src/ imports itself through other files", () => {
  expect(importCycles(files)).toEqual([]);
});

describe("the checker catches planted cycles", () => {
  const planted = (entries: Record<string, string>) => Object.entries(entries).map(([path, text]) => ({ path, text }));

  test("two files importing each other, one of them for a type only", () => {
    const files = planted({
      "db/a.ts": 'import type { B } from "./b.js";',
      "db/b.ts": 'import { a } from "./a.js";',
      "db/c.ts": 'import { a } from "./a.js";',
    });
    expect(importCycles(files)).toEqual(["db/a.ts → db/b.ts → db/a.ts"]);
  });

  test("a longer circle across folders and .tsx files, named by its shortest cycle", () => {
    const files = planted({
      "app/views/form.tsx": 'import { draft } from "../draft.js";\nexport { x } from "./fields.js";',
      "app/views/fields.tsx": 'import type { Form } from "./form.js";',
      "app/draft.ts": 'import { y } from "./views/form.js";',
    });
    expect(importCycles(files)).toEqual(["app/draft.ts → app/views/form.tsx → app/draft.ts (3 files reach each other)"]);
  });

  test("a file importing itself, and no cycle in a chain", () => {
    expect(importCycles(planted({ "x.ts": 'import "./x.js";' }))).toEqual(["x.ts → x.ts"]);
    expect(importCycles(planted({ "x.ts": 'import "./y.js";', "y.ts": 'import "./z.js";', "z.ts": "" }))).toEqual([]);
  });
});
