import { expect, test } from "vitest";
import type { SourceFile } from "./layer-rules.js";
import { sourceFiles } from "./source-files.js";

// Background work is picked up one way (src/background/): one LISTEN
// connection per process, in the notifier. A second listener would bring
// back a second connection with its own reconnect rules.
const notifier = "background/notifier.ts";

/** Files of src/ that open a listener: a LISTEN statement or a pg client's notification event. */
function listeners(files: readonly SourceFile[]): string[] {
  const listens = /(?:query\(\s*[`"']\s*LISTEN\b|[`"']LISTEN\s|\.on\(\s*["']notification["'])/;
  return files.filter((file) => listens.test(file.text)).map((file) => file.path);
}

test("only the notifier listens", () => {
  expect(listeners(sourceFiles()).filter((file) => file !== notifier)).toEqual([]);
  expect(listeners(sourceFiles())).toContain(notifier);
});

test("a planted listener is found", () => {
  const planted = [
    { path: "delivery/wakeup.ts", text: 'client.on("notification", wake);' },
    { path: "ingest/x.ts", text: "await client.query(`LISTEN " + "$" + "{channel}`);" },
    { path: "ingest/y.ts", text: "// they LISTEN on it" },
  ];
  expect(listeners(planted)).toEqual(["delivery/wakeup.ts", "ingest/x.ts"]);
});
