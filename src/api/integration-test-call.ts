import type { MessageInitShape } from "@bufbuild/protobuf";
import { create } from "@bufbuild/protobuf";
import {
  DestinationKind,
  type Destination as DestinationInput,
  TestOutcome,
  type TestedCallSchema,
  VendorRequestSchema,
} from "../../gen/waypost/v1/destination_pb.js";
import type { DestinationRow } from "../db/queries/destinations.js";
import type { StoredCallRow } from "../db/queries/message-lookup.js";
import type { IntegrationRunner } from "../delivery/kinds/integration/runner.js";
import { validateIntegrationSettings } from "../delivery/kinds/integration/settings.js";
import { previewIntegrationCall, previewRunner } from "../delivery/kinds/integration/test-calls.js";
import { invalidArgument } from "./errors.js";

// TestDestination on an integration draft: what each call's matching
// subscriptions would send, nothing sent. Kept apart from
// destination-rules.ts, which only calls these two.

/** The draft's runner when the draft (or the destination it names) is an integration; undefined otherwise. */
export function integrationDraftOf(input: DestinationInput, existing: DestinationRow | undefined): IntegrationRunner | undefined {
  const stored = existing?.kind === "integration" ? (existing.integration ?? undefined) : undefined;
  const named = input.kind === DestinationKind.INTEGRATION || input.integration !== undefined;
  if (!named && !(input.kind === DestinationKind.UNSPECIFIED && stored)) return undefined;
  // A masked secret sent back keeps the stored one, as on update.
  const settings =
    input.integration !== undefined ? validateIntegrationSettings("destination.integration", input.integration, stored) : stored;
  if (!settings) throw invalidArgument("destination.integration", "is required for an integration");
  return previewRunner(settings);
}

type TestedCall = MessageInitShape<typeof TestedCallSchema>;

/** One call through the draft's subscriptions: SEND with the requests, NOT_SUBSCRIBED, or ACTION_ERROR with the action's message. */
export async function testIntegrationCall(
  runner: IntegrationRunner,
  call: StoredCallRow,
  body: string,
  base: { messageId: string; sourceId: string; type: string; event: string },
  now: () => Date,
): Promise<TestedCall> {
  const preview = await previewIntegrationCall(runner, body, { receivedAt: call.received_at, sentAt: call.sent_at }, now);
  if (preview.outcome === "not_subscribed") return { ...base, outcome: TestOutcome.NOT_SUBSCRIBED };
  const requests = preview.requests.map((r) => create(VendorRequestSchema, r));
  if (preview.outcome === "action_error") return { ...base, outcome: TestOutcome.ACTION_ERROR, error: preview.error, body, requests };
  return { ...base, outcome: TestOutcome.SEND, body, requests };
}
