import { randomUUID } from "node:crypto";
import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type pg from "pg";
import {
  DestinationKind,
  DestinationSchema,
  type DestinationService,
  Ordering,
  type Destination,
} from "../../gen/waypost/v1/destination_pb.js";
import type { Clock } from "../clock.js";
import { type JobTableDriver, wakeWorkers } from "../db/job-table/index.js";
import { withTransaction, type Queryable } from "../db/pool.js";
import {
  deleteDestinationRow,
  insertDestination,
  listDestinationRows,
  missingSourceIds,
  replaceDestinationSources,
  selectDestination,
  updateDestinationRow,
  updateKindColumns,
  type DestinationRow,
} from "../db/queries/destinations.js";
import { probeNow } from "../db/queries/destination-health.js";
import { keyQueuedDeliveries } from "../db/job-table/index.js";
import { generateSigningSecret } from "../signing/standard-webhooks.js";
import { healthFields } from "./destination-health-fields.js";
import type { AddressGuard } from "../outbound/address-guard.js";
import { validateName, validateSourceIds } from "./destination-validation.js";
import { orderingToProto, validateMaxRequestsPerSecond, validateOrdering } from "./flow-control-validation.js";
import { invalidArgument, notFound, requireUuid } from "./errors.js";
import type { TransformSandboxes } from "../sandbox/transform-sandbox.js";
import { validateDropFieldList, validateFilter, validateTransform } from "../routing/validate-rules.js";
import { validateConsentCategories } from "../routing/consent.js";
import { createDestinationRules } from "./destination-rules.js";
import { decodeTimeCursor, listPage, pageSize, timeCursorOf } from "./paging.js";
import { placeOnLog, syncLogCursors } from "../db/call-log/log-cursors.js";
import { kindOf, registeredKinds, requireKindOfProto, type RegisteredKind } from "../delivery/kinds/registry.js";
import type { KindField } from "../delivery/kinds/kind.js";

export interface DestinationServiceOptions {
  pool: pg.Pool;
  clock: Clock;
  /** After RotateSigningSecret the previous secret signs this much longer (default 24 h). */
  signingSecretOverlapMs?: number;
  /** Refuses destination hosts (webhook URLs) naming a private address literally (the SSRF guard of deliveries). */
  addressGuard: AddressGuard;
  /** Checks a transform's syntax (nothing is run). */
  sandboxes: TransformSandboxes;
  /** Called after any change to a destination's routing (its rules, sources or state). */
  onRoutingChanged?: () => void;
  /** Called after a background job (a backfill) is stored. */
  onJobCreated?: () => void;
  /** The job table's driver (one Postgres's or Citus's). */
  jobTable: JobTableDriver;
  /** With the call log on, a destination of a batching kind reads calls by cursor from its creation (db/call-log/). */
  callLog?: boolean | undefined;
}

/** The fields every destination has, by update-mask path, and whether an input sets each (for an empty mask). */
const commonFields: ReadonlyArray<readonly [path: string, given: (input: Destination) => boolean]> = [
  ["name", (input) => input.name !== ""],
  ["source_ids", (input) => input.sourceIds.length > 0],
  ["enabled", (input) => input.enabled !== undefined],
  ["max_requests_per_second", (input) => input.maxRequestsPerSecond !== undefined],
  ["ordering", (input) => input.ordering !== Ordering.UNSPECIFIED],
  ["filter", (input) => input.filter !== undefined],
  ["drop_fields", (input) => input.dropFields.length > 0],
  ["transform", (input) => input.transform !== ""],
  ["consent_categories", (input) => input.consentCategories.length > 0],
  ["require_consent", (input) => input.requireConsent],
  ["add_profile_id", (input) => input.addProfileId],
];

/** Every kind's fields, in registry order. */
const kindFields = (): Array<{ kind: RegisteredKind; field: KindField }> =>
  registeredKinds.flatMap((kind) => kind.settings.fields.map((field) => ({ kind, field })));

const snakeToCamel = (path: string) => path.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/** The kind a request asks for (unspecified: the first kind, webhooks). */
const kindOfInput = (input: Destination): RegisteredKind => requireKindOfProto("destination.kind", input.kind);

/** Fields of other kinds are refused on a destination of this one, naming the field. */
function refuseOtherKinds(kind: RegisteredKind, input: Destination, paths: ReadonlySet<string> | undefined, generate: boolean) {
  for (const { kind: owner, field } of kindFields()) {
    if (owner === kind) continue;
    // On update only the fields the mask names count.
    if ((!paths || paths.has(field.path)) && field.given(input, generate)) {
      throw invalidArgument(`destination.${field.name}`, `a ${kind.label} destination has no ${field.describe}`);
    }
  }
}

/** DestinationService: destinations of every registered kind, validated as docs/api.md#destinations says. */
export function createDestinationService(options: DestinationServiceOptions): ServiceImpl<typeof DestinationService> {
  const { pool, clock } = options;
  const overlapMs = options.signingSecretOverlapMs ?? 24 * 3_600_000;
  const rules = createDestinationRules(options);
  return {
    testDestination: (req) => rules.testDestination(req),
    backfillDestination: (req) => rules.backfillDestination(req),
    getBackfill: (req) => rules.getBackfill(req),
    listBackfills: (req) => rules.listBackfills(req),
    cancelBackfill: (req) => rules.cancelBackfill(req),
    async createDestination(req) {
      const input = req.destination;
      if (!input) throw invalidArgument("destination", "is required");
      const id = randomUUID();
      const name = validateName("destination.name", input.name);
      const kind = kindOfInput(input);
      if (kind.callLogOnly && !options.jobTable.callLog) {
        throw new ConnectError(
          `a ${kind.label} destination reads the call log, which this job table (Citus) does not have yet`,
          Code.FailedPrecondition,
        );
      }
      refuseOtherKinds(kind, input, undefined, req.generateSigningSecret);
      const generated = req.generateSigningSecret ? generateSigningSecret() : "";
      const settings = kind.settings.read(input, {
        paths: new Set(kind.settings.fields.map((f) => f.path)),
        guard: options.addressGuard,
        now: clock.now(),
        generatedSigningSecret: generated || undefined,
      });
      const sourceIds = validateSourceIds("destination.sourceIds", input.sourceIds);
      const rate = validateMaxRequestsPerSecond("destination.maxRequestsPerSecond", input.maxRequestsPerSecond);
      const ordering = validateOrdering("destination.ordering", input.ordering);
      const filter = validateFilter("destination.filter", input.filter);
      const dropFields = validateDropFieldList("destination.dropFields", input.dropFields);
      const transform = await validateTransform("destination.transform", input.transform, options.sandboxes);
      const consentCategories = validateConsentCategories("destination.consentCategories", input.consentCategories);
      await kind.settings.check?.(settings, undefined, pool);
      const row = await withTransaction(pool, async (tx) => {
        await requireSources(tx, sourceIds);
        const now = clock.now();
        await insertDestination(tx, {
          id,
          name,
          enabled: input.enabled ?? true,
          kind: kind.name,
          columns: kind.settings.toRow(settings),
          maxRequestsPerSecond: rate,
          ordering,
          filter,
          dropFields,
          transform,
          consentCategories,
          requireConsent: input.requireConsent,
          addProfileId: input.addProfileId,
          at: now,
        });
        await replaceDestinationSources(tx, id, sourceIds);
        if ((options.callLog || kind.callLogOnly) && options.jobTable.callLog) await placeOnLog(tx, id);
        return (await selectDestination(tx, id))!;
      });
      options.onRoutingChanged?.();
      return { destination: toProto(row, clock.now()), signingSecret: generated };
    },
    async getDestination(req) {
      const id = requireUuid("id", req.id);
      const row = await selectDestination(pool, id);
      if (!row) throw notFound("destination", id);
      return { destination: toProto(row, clock.now()) };
    },
    async listDestinations(req) {
      const size = pageSize(req.pageSize);
      const sourceId = req.sourceId ? requireUuid("sourceId", req.sourceId) : undefined;
      const after = decodeTimeCursor(req.pageToken);
      const page = await listPage(size, (limit) => listDestinationRows(pool, { sourceId, after, limit }), timeCursorOf);
      return { destinations: page.rows.map((row) => toProto(row, clock.now())), nextPageToken: page.nextPageToken };
    },
    async updateDestination(req) {
      const input = req.destination;
      if (!input) throw invalidArgument("destination", "is required");
      const id = requireUuid("destination.id", input.id);
      const paths = maskPaths(req.updateMask?.paths ?? [], input);
      const rules = await validateRuleUpdate(input, paths, options.sandboxes);
      // Outside the transaction: a kind's look at its target (a warehouse) may take seconds.
      await checkSettingsUpdate(pool, id, input, paths, options.addressGuard, clock.now());
      const row = await withTransaction(pool, async (tx) => {
        // The row lock serialises concurrent updates; the etag catches
        // read-modify-write races between clients.
        const current = await selectDestination(tx, id, true);
        if (!current) throw notFound("destination", id);
        if (input.etag !== "" && input.etag !== etagOf(current)) {
          throw new ConnectError(
            `destination ${id} was changed since etag ${JSON.stringify(input.etag)} was read; get it again and retry`,
            Code.Aborted,
          );
        }
        await applyUpdate(tx, current, input, paths, clock.now(), options.addressGuard, rules);
        // A source connected now gets its cursor with the connection (one a later sync makes starts at the same place).
        // (With the log off too: a destination already on it stays there.)
        if (paths.has("source_ids") && options.jobTable.callLog) await syncLogCursors(tx);
        return (await selectDestination(tx, id))!;
      });
      options.onRoutingChanged?.();
      return { destination: toProto(row, clock.now()) };
    },
    async rotateSigningSecret(req) {
      const id = requireUuid("id", req.id);
      const { row, secret } = await withTransaction(pool, async (tx) => {
        const current = await selectDestination(tx, id, true);
        if (!current) throw notFound("destination", id);
        const kind = kindOf(current);
        const rotate = kind.settings.rotateSigningSecret;
        if (!rotate) throw new ConnectError(`a ${kind.label} destination has no signing secrets`, Code.FailedPrecondition);
        const now = clock.now();
        const rotated = rotate(kind.settings.fromRow(current), now, overlapMs);
        await updateKindColumns(tx, id, kind.settings.toRow(rotated.settings), now);
        return { row: (await selectDestination(tx, id))!, secret: rotated.secret };
      });
      return { signingSecret: secret, destination: toProto(row, clock.now()) };
    },
    async deleteDestination(req) {
      const id = requireUuid("id", req.id);
      await withTransaction(pool, async (tx) => {
        const current = await selectDestination(tx, id, true);
        if (!current) throw notFound("destination", id);
        await options.jobTable.cancelDestinationDeliveries(tx, id, clock.now());
        await deleteDestinationRow(tx, id);
      });
      // Its sandboxes in this process go now; other processes free theirs when unused.
      options.sandboxes.forgetDestination(id);
      options.onRoutingChanged?.();
      return {};
    },
  };
}

/** A kind's slower look at changed settings (a warehouse's), before the transaction. */
async function checkSettingsUpdate(db: pg.Pool, id: string, input: Destination, paths: Set<string>, guard: AddressGuard, now: Date) {
  const current = await selectDestination(db, id);
  if (!current) return;
  const kind = kindOf(current);
  if (!kind.settings.check || !kind.settings.fields.some((f) => paths.has(f.path))) return;
  const stored = kind.settings.fromRow(current);
  // Invalid settings are refused (naming the field) by the update itself.
  const next = (() => {
    try {
      return kind.settings.read(input, { paths, current: stored, guard, now });
    } catch {
      return undefined;
    }
  })();
  if (next !== undefined) await kind.settings.check(next, stored, db);
}

/** Mask paths in proto (snake_case) form; an empty mask means "every field that is set". */
function maskPaths(paths: readonly string[], input: Destination): Set<string> {
  const updatable = [...commonFields.map(([path]) => path), ...kindFields().map(({ field }) => field.path)];
  if (paths.length === 0) {
    const implied = new Set<string>();
    for (const [path, given] of commonFields) if (given(input)) implied.add(path);
    for (const { field } of kindFields()) if (field.given(input, false)) implied.add(field.path);
    return implied;
  }
  for (const path of paths) {
    if (!updatable.includes(path)) {
      throw invalidArgument(
        "updateMask",
        `cannot update ${JSON.stringify(path)}; updatable: ${[...new Set(updatable)].map(snakeToCamel).join(", ")}`,
      );
    }
  }
  return new Set(paths);
}

async function applyUpdate(
  tx: Queryable,
  current: DestinationRow,
  input: Destination,
  paths: Set<string>,
  now: Date,
  addressGuard: AddressGuard,
  rules: RuleUpdate,
) {
  const name = paths.has("name") ? validateName("destination.name", input.name) : current.name;
  const kind = kindOf(current);
  if (input.kind !== DestinationKind.UNSPECIFIED && kindOfInput(input) !== kind) {
    throw invalidArgument("destination.kind", `a destination's kind cannot change (it is ${current.kind})`);
  }
  refuseOtherKinds(kind, input, paths, false);
  const settings = kind.settings.read(input, { paths, current: kind.settings.fromRow(current), guard: addressGuard, now });
  const enabled = paths.has("enabled") ? (input.enabled ?? false) : current.enabled;
  const rate = paths.has("max_requests_per_second")
    ? validateMaxRequestsPerSecond("destination.maxRequestsPerSecond", input.maxRequestsPerSecond)
    : current.max_requests_per_second;
  const ordering = paths.has("ordering") ? validateOrdering("destination.ordering", input.ordering) : current.ordering;
  if (paths.has("source_ids")) {
    const sourceIds = validateSourceIds("destination.sourceIds", input.sourceIds);
    await requireSources(tx, sourceIds);
    await replaceDestinationSources(tx, current.id, sourceIds);
  }
  await updateDestinationRow(tx, {
    id: current.id,
    name,
    enabled,
    kind: current.kind,
    columns: kind.settings.toRow(settings),
    maxRequestsPerSecond: rate,
    ordering,
    filter: rules.filter === undefined ? current.filter : rules.filter,
    dropFields: rules.dropFields ?? current.drop_fields,
    transform: rules.transform ?? current.transform,
    consentCategories: rules.consentCategories ?? current.consent_categories,
    requireConsent: paths.has("require_consent") ? input.requireConsent : current.require_consent,
    addProfileId: paths.has("add_profile_id") ? input.addProfileId : current.add_profile_id,
    at: now,
  });
  // Deliveries already waiting get their user keys in this transaction.
  if (ordering === "per_user" && current.ordering !== "per_user") await keyQueuedDeliveries(tx, current.id);
  // A new target (webhooks, a warehouse) gets a probe at once rather than after an open circuit's cooldown.
  const moved = kind.settings.fields.some((field) => field.moves && paths.has(field.path));
  if (moved) await probeNow(tx, current.id, now);
  // Turning a destination on, a new target, or a changed rate limit or
  // ordering (the claim reads both) can make waiting deliveries due: wake the workers.
  const flowChanged = rate !== current.max_requests_per_second || ordering !== current.ordering;
  if ((enabled && (!current.enabled || flowChanged)) || moved) await wakeWorkers(tx);
}

/** The routing rules an update sets (undefined: unchanged), validated before the transaction. */
interface RuleUpdate {
  filter?: Record<string, unknown> | null;
  dropFields?: string[];
  transform?: string;
  consentCategories?: string[];
}

async function validateRuleUpdate(input: Destination, paths: Set<string>, sandboxes: TransformSandboxes): Promise<RuleUpdate> {
  const rules: RuleUpdate = {};
  if (paths.has("filter")) rules.filter = validateFilter("destination.filter", input.filter);
  if (paths.has("drop_fields")) rules.dropFields = validateDropFieldList("destination.dropFields", input.dropFields);
  if (paths.has("transform")) rules.transform = await validateTransform("destination.transform", input.transform, sandboxes);
  if (paths.has("consent_categories")) {
    rules.consentCategories = validateConsentCategories("destination.consentCategories", input.consentCategories);
  }
  return rules;
}

async function requireSources(db: Queryable, sourceIds: readonly string[]) {
  const missing = await missingSourceIds(db, sourceIds);
  if (missing.length > 0) {
    throw invalidArgument("destination.sourceIds", `unknown source ${JSON.stringify(missing[0])}`);
  }
}

function etagOf(row: DestinationRow): string {
  return `r${row.revision}`;
}

function toProto(row: DestinationRow, now: Date): Destination {
  const kind = kindOf(row);
  return create(DestinationSchema, {
    // The kind's own fields, masked.
    ...kind.settings.toProto(kind.settings.fromRow(row), now),
    ...healthFields(row, now),
    id: row.id,
    name: row.name,
    sourceIds: row.source_ids,
    enabled: row.enabled,
    kind: kind.proto,
    maxRequestsPerSecond: row.max_requests_per_second,
    ordering: orderingToProto(row.ordering),
    filter: (row.filter ?? undefined) as JsonObject | undefined,
    dropFields: row.drop_fields,
    transform: row.transform,
    consentCategories: row.consent_categories,
    requireConsent: row.require_consent,
    addProfileId: row.add_profile_id,
    etag: etagOf(row),
    createTime: timestampFromDate(row.created_at),
    updateTime: timestampFromDate(row.updated_at),
  });
}
