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
