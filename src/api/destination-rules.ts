import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  TestOutcome,
  type BackfillDestinationRequest,
  type CancelBackfillRequest,
  type CancelBackfillResponseSchema,
  type GetBackfillRequest,
  type GetBackfillResponseSchema,
  type ListBackfillsRequest,
  type ListBackfillsResponseSchema,
  type TestDestinationRequest,
  type TestDestinationResponseSchema,
  type TestedCallSchema,
} from "../../gen/waypost/v1/destination_pb.js";
import type { Clock } from "../clock.js";
import type { JobTableDriver } from "../db/job-table/index.js";
import { cancelJob, listJobs, selectJob } from "../db/queries/background-jobs.js";
import { selectDestination } from "../db/queries/destinations.js";
import { selectCallsByMessageIds, selectRecentCalls, type StoredCallRow } from "../db/queries/message-lookup.js";
import type { DraftTester } from "../delivery/kinds/kind.js";
import type { AddressGuard } from "../outbound/address-guard.js";
import { validateConsentCategories } from "../routing/consent.js";
import { compileRouteRules, heldBackBy, type RouteRules, routedCall } from "../routing/route-rules.js";
import { shapeBody } from "../routing/shape-body.js";
import type { TransformSandboxes } from "../sandbox/transform-sandbox.js";
import { validateDropFieldList, validateFilter, validateTransform } from "../routing/validate-rules.js";
import { requireStorableText, validateSourceIds } from "./destination-validation.js";
import { invalidArgument, notFound, requireUuid } from "./errors.js";
import { eventOf } from "./explain-message.js";
import { draftKindOf } from "./draft-kind.js";
import { backfillToProto } from "./job-proto.js";
import { createBackfillRequests } from "./backfill-requests.js";

export interface DestinationRulesOptions {
  pool: pg.Pool;
  clock: Clock;
  sandboxes: TransformSandboxes;
  /** A draft's settings are read as a save would read them, literal private hosts refused. */
  addressGuard: AddressGuard;
  /** Called after a backfill job is stored (this process's job runner, if any, takes it at once). */
  onJobCreated?: () => void;
  /** The job table's driver (a backfill's count of candidates). */
  jobTable: JobTableDriver;
}

const maxSample = 500;
const maxListed = 100;

/** TestDestination and the backfills: a destination's rules over stored calls. */
export function createDestinationRules(options: DestinationRulesOptions) {
  const { pool, sandboxes } = options;
  const requests = createBackfillRequests(options);

  /** The draft's rules and sources; an existing destination's (by id) fill what the draft leaves unset. */
  async function draftOf(req: TestDestinationRequest) {
    const input = req.destination;
    if (!input) throw invalidArgument("destination", "is required");
    const existing = input.id === "" ? undefined : await selectDestination(pool, requireUuid("destination.id", input.id));
    if (input.id !== "" && !existing) throw notFound("destination", input.id);
    const sourceIds =
      input.sourceIds.length > 0 ? validateSourceIds("destination.sourceIds", input.sourceIds) : (existing?.source_ids ?? []);
    if (sourceIds.length === 0)
      throw invalidArgument("destination.sourceIds", "name the sources whose calls to test with (or an existing destination's id)");
    const filter = input.filter !== undefined ? validateFilter("destination.filter", input.filter) : (existing?.filter ?? null);
    const dropFields =
      input.dropFields.length > 0 ? validateDropFieldList("destination.dropFields", input.dropFields) : (existing?.drop_fields ?? []);
    const transform =
      input.transform !== "" ? await validateTransform("destination.transform", input.transform, sandboxes) : (existing?.transform ?? "");
    const consentCategories =
      input.consentCategories.length > 0
        ? validateConsentCategories("destination.consentCategories", input.consentCategories)
        : (existing?.consent_categories ?? []);
    const kind = draftKindOf(input, existing, { guard: options.addressGuard, now: () => options.clock.now() });
    const rules = compileRouteRules({
      filter,
      consentCategories,
      // A draft can turn it on; left false, the stored destination's setting holds (as with every unset field).
      requireConsent: input.requireConsent || (existing?.require_consent ?? false),
      matcher: kind.matcher,
    });
    return { sourceIds, rules, dropFields, transform, tester: kind.tester };
  }

  async function callsOf(req: TestDestinationRequest, sourceIds: readonly string[]): Promise<StoredCallRow[]> {
    if (req.messageIds.length > maxSample) throw invalidArgument("messageIds", `at most ${maxSample} message ids`);
    for (const [i, id] of req.messageIds.entries()) requireStorableText(`messageIds[${i}]`, id);
    if (req.messageIds.length > 0) return selectCallsByMessageIds(pool, sourceIds, req.messageIds);
    if (req.sampleSize < 0 || req.sampleSize > maxSample) throw invalidArgument("sampleSize", `must be 0 to ${maxSample} (0: 20)`);
    return selectRecentCalls(pool, sourceIds, req.sampleSize === 0 ? 20 : req.sampleSize);
  }

  return {
    async testDestination(req: TestDestinationRequest): Promise<MessageInitShape<typeof TestDestinationResponseSchema>> {
      const draft = await draftOf(req);
      const calls = await callsOf(req, draft.sourceIds);
      // A sandbox of its own, freed after: a draft never shares state with live deliveries.
      const sandboxKey = `test:${randomUUID()}`;
      try {
        const tested: Array<MessageInitShape<typeof TestedCallSchema>> = [];
        for (const call of calls) tested.push(await testOne(call, draft, sandboxKey));
        return { calls: tested };
      } finally {
        sandboxes.forget(sandboxKey);
      }
    },
    backfillDestination: (req: BackfillDestinationRequest) => requests.backfillDestination(req),
    async getBackfill(req: GetBackfillRequest): Promise<MessageInitShape<typeof GetBackfillResponseSchema>> {
      const id = requireUuid("id", req.id);
      const row = await selectJob(pool, "backfill", id);
      if (!row) throw notFound("backfill", id);
      return { backfill: backfillToProto(row) };
    },
    async listBackfills(req: ListBackfillsRequest): Promise<MessageInitShape<typeof ListBackfillsResponseSchema>> {
      const destinationId = requireUuid("destinationId", req.destinationId);
      if (req.pageSize < 0 || req.pageSize > maxListed) throw invalidArgument("pageSize", `must be 0 to ${maxListed} (0: 20)`);
      const rows = await listJobs(pool, "backfill", destinationId, req.pageSize === 0 ? 20 : req.pageSize);
      return { backfills: rows.map(backfillToProto) };
    },
    async cancelBackfill(req: CancelBackfillRequest): Promise<MessageInitShape<typeof CancelBackfillResponseSchema>> {
      const id = requireUuid("id", req.id);
      const row = await cancelJob(pool, "backfill", id, options.clock.now());
      if (!row) throw notFound("backfill", id);
      return { backfill: backfillToProto(row) };
    },
  };

  async function testOne(
    call: StoredCallRow,
    draft: { rules: RouteRules; dropFields: string[]; transform: string; tester: DraftTester | undefined },
    sandboxKey: string,
  ): Promise<MessageInitShape<typeof TestedCallSchema>> {
    const base = { messageId: call.message_id, sourceId: call.source_id, type: call.type, event: eventOf(call.payload) };
    // The same checks, in the same order, as routing (docs/routing.md#consent).
    const held = heldBackBy(draft.rules, routedCall(JSON.parse(call.payload) as unknown, call.received_at));
    if (held) return { ...base, outcome: heldOutcomes[held] };
    const shaped = await shapeBody(call.payload, { dropFields: draft.dropFields, transform: draft.transform, sandboxKey }, sandboxes);
    if (shaped.kind === "send" && draft.tester) {
      return { ...base, ...(await draft.tester({ body: shaped.body, receivedAt: call.received_at, sentAt: call.sent_at })) };
    }
    if (shaped.kind === "send") return { ...base, outcome: TestOutcome.SEND, body: shaped.body };
    if (shaped.kind === "dropped") return { ...base, outcome: TestOutcome.DROPPED_BY_TRANSFORM };
    // A test run's calls go one at a time and are never put off: "busy" cannot come back here.
    return { ...base, outcome: TestOutcome.TRANSFORM_ERROR, error: shaped.kind === "error" ? shaped.error : "transform: busy" };
  }
}

const heldOutcomes = {
  filter: TestOutcome.FILTERED,
  consent: TestOutcome.NO_CONSENT,
  subscriptions: TestOutcome.NOT_SUBSCRIBED,
} as const;
