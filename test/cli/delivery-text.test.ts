import { create } from "@bufbuild/protobuf";
import { expect, test } from "vitest";
import { AttemptOutcome, DeliveryAttemptSchema, DeliverySchema } from "../../gen/waypost/v1/delivery_pb.js";
import { describeDelivery } from "../../src/cli/commands/delivery-text.js";

test("delivery show names each attempt's subscription and method when they are set", () => {
  const attempt = (subscription: string, method: string, url: string) =>
    create(DeliveryAttemptSchema, { attempt: 1, url, outcome: AttemptOutcome.SUCCESS, statusCode: 200, subscription, method });
  const integration = describeDelivery(
    create(DeliverySchema, {
      id: "1",
      attempts: [attempt("Track Calls", "POST", "https://api.vendor.test/track"), attempt("Identify Calls", "", "integration:vendor")],
    }),
  );
  expect(integration).toContain("SUBSCRIPTION");
  expect(integration).toMatch(/Track Calls\s+POST https:\/\/api\.vendor\.test\/track/);
  expect(integration).toMatch(/Identify Calls\s+integration:vendor/);
  // A webhook's attempts have neither: the table is as before.
  const webhook = describeDelivery(create(DeliverySchema, { id: "2", attempts: [attempt("", "", "https://example.com/hook")] }));
  expect(webhook).not.toContain("SUBSCRIPTION");
});

test("delivery show of an integration: the call labelled as stored, each attempt's request as sent, not an empty header list", () => {
  const text = describeDelivery(
    create(DeliverySchema, {
      id: "3",
      body: '{"type":"track","event":"Viewed"}',
      requestsInAttempts: true,
      attempts: [
        create(DeliveryAttemptSchema, {
          attempt: 1,
          url: "https://vendor.test/e",
          outcome: AttemptOutcome.SUCCESS,
          statusCode: 200,
          subscription: "Mapped",
          method: "PUT",
          requestHeaders: { "content-type": "application/json", "x-key": "***" },
          requestBody: '{"user":"u9","event":"Viewed"}',
          requestBodyBytes: 30,
        }),
      ],
    }),
  );
  expect(text).not.toContain("headers sent");
  expect(text).toContain("call (as stored; the requests sent are below):");
  expect(text).toContain('attempt 1, subscription "Mapped": PUT https://vendor.test/e');
  expect(text).toContain("  x-key: ***");
  expect(text).toContain('  body:\n{"user":"u9","event":"Viewed"}');
});
