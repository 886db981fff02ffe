import { create } from "@bufbuild/protobuf";
import { expect, test } from "vitest";
import { TestedCallSchema, TestOutcome, VendorRequestSchema } from "../../gen/waypost/v1/destination_pb.js";
import { testedCallsText } from "../../src/cli/commands/tested-calls.js";

test("destinations test prints an integration's requests (method, URL, masked headers, body), not only with --json", () => {
  const text = testedCallsText([
    create(TestedCallSchema, {
      messageId: "m-1",
      type: "track",
      event: "Viewed",
      outcome: TestOutcome.SEND,
      requests: [
        create(VendorRequestSchema, {
          subscription: "Mapped",
          method: "PUT",
          url: "https://vendor.test/e?key=***",
          headers: { "x-key": "***" },
          body: '{"user":"u9"}',
        }),
      ],
    }),
    create(TestedCallSchema, { messageId: "m-2", type: "identify", outcome: TestOutcome.NOT_SUBSCRIBED }),
  ]);
  expect(text).toMatch(/m-1\s+track\s+Viewed\s+send\s+PUT https:\/\/vendor\.test\/e\?key=\*\*\* \(below\)/);
  expect(text).toContain("requests for m-1 (secrets masked):");
  expect(text).toContain("  1. Mapped: PUT https://vendor.test/e?key=***");
  expect(text).toContain("     x-key: ***");
  expect(text).toContain('     body: {"user":"u9"}');
  expect(text).not.toContain("requests for m-2");
});
