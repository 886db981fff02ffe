import { create } from "@bufbuild/protobuf";
import { TestOutcome, VendorRequestSchema } from "../../../../gen/waypost/v1/destination_pb.js";
import { maskText, type VendorContext } from "../../../catalog/catalog-fetch.js";
import type { IntegrationDestinationSettings } from "../../../catalog/integration-settings.js";
import { type SegmentEventTimes, segmentEventOf } from "../../../catalog/segment-event.js";
import type { DraftTester } from "../kind.js";
import { createIntegrationRunner, type IntegrationRunner } from "./runner.js";

// TestDestination on an integration draft (the kind's `test`): what each
// call's matching subscriptions would send, nothing sent.

/** One request a subscription's action would send, secrets masked. */
export interface PreviewedRequest {
  subscription: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** What an integration draft would do with one call, sending nothing. */
export type CallPreview =
  | { outcome: "send"; requests: PreviewedRequest[] }
  | { outcome: "not_subscribed" }
  | { outcome: "action_error"; error: string; requests: PreviewedRequest[] };

/**
 * A draft's test, its runner made once per TestDestination request (its
 * subscriptions parsed once for every call): SEND with the requests,
 * NOT_SUBSCRIBED, or ACTION_ERROR with the action's message.
 */
export function testIntegrationDraft(settings: IntegrationDestinationSettings, now: () => Date): DraftTester {
  const runner = createIntegrationRunner(0, settings);
  return async ({ body, receivedAt, sentAt }) => {
    const preview = await previewIntegrationCall(runner, body, { receivedAt, sentAt }, now);
    if (preview.outcome === "not_subscribed") return { outcome: TestOutcome.NOT_SUBSCRIBED };
    const requests = preview.requests.map((r) => create(VendorRequestSchema, r));
    if (preview.outcome === "action_error") return { outcome: TestOutcome.ACTION_ERROR, error: preview.error, body, requests };
    return { outcome: TestOutcome.SEND, body, requests };
  };
}

/**
 * Runs the actions of the subscriptions a call matches with the catalog's
 * runtime (mapping, validation, request building), answering every request
 * with 200 `{}` and sending none (catalog-fetch.ts, dry run). The first
 * action that refuses the call makes it an ACTION_ERROR, with the action's
 * message; the requests built before are still shown. A subscription whose
 * calls go in batches shows the batch form's request for this call alone.
 */
export async function previewIntegrationCall(
  runner: IntegrationRunner,
  body: string,
  times: SegmentEventTimes,
  now: () => Date,
): Promise<CallPreview> {
  const event = segmentEventOf(JSON.parse(body) as Record<string, unknown>, times);
  const matched = runner.compiled.matching(event).map((i) => runner.subscriptions[i]!);
  if (matched.length === 0) return { outcome: "not_subscribed" };
  const requests: PreviewedRequest[] = [];
  for (const subscription of matched) {
    const context: VendorContext = { dryRun: true, secrets: runner.secrets, requests: [], now };
    const verdict = subscription.batch
      ? (await runner.runBatch(subscription, [event], context))[0]!
      : await runner.run(subscription, event, context);
    for (const r of context.requests) {
      requests.push({
        subscription: subscription.name,
        method: r.method,
        url: r.url,
        headers: r.headers,
        body: maskText(r.body, runner.secrets),
      });
    }
    if (verdict.outcome !== "success") {
      return { outcome: "action_error", error: `subscription "${subscription.name}": ${verdict.message ?? "refused"}`, requests };
    }
  }
  return { outcome: "send", requests };
}
