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
import { cancelDestinationDeliveries, wakeWorkers } from "../db/job-table/index.js";
import { withTransaction, type Queryable } from "../db/pool.js";
import {
  deleteDestinationRow,
  insertDestination,
  listDestinationRows,
  missingSourceIds,
  replaceDestinationSources,
  selectDestination,
  updateDestinationRow,
  updateSigningSecrets,
  type DestinationRow,
} from "../db/queries/destinations.js";
import { deleteDestinationHealth, probeNow } from "../db/queries/destination-health.js";
import { activeSigningSecrets, generateSigningSecret } from "../signing/standard-webhooks.js";
import { healthFields } from "./destination-health-fields.js";
import type { AddressGuard } from "../outbound/address-guard.js";
import { validateName, validateSecret, validateSourceIds, validateWebhooks } from "./destination-validation.js";
import { keepMaskedValues, maskWebhooks } from "./masked-headers.js";
import { kindOf, kindToProto, postgresToProto, refuseWebhookSettings, validatePostgres } from "./destination-kinds.js";
import { orderingToProto, validateMaxRequestsPerSecond, validateOrdering } from "./flow-control-validation.js";
import { invalidArgument, notFound, requireUuid } from "./errors.js";
import type { TransformSandboxes } from "../routing/transform-sandbox.js";
import { validateDropFieldList, validateFilter, validateTransform } from "../routing/validate-rules.js";
import { createDestinationRules } from "./destination-rules.js";
import { createWarehouseGuard, type WarehouseGuard } from "./warehouse-check.js";
import { decodeTimeCursor, encodeTimeCursor, pageSize } from "./paging.js";
import { hasActiveSigningSecret, maxSigningSecrets, rotateSigningSecrets, validateSigningSecrets } from "./signing-secrets.js";

export interface DestinationServiceOptions {
  pool: pg.Pool;
  clock: Clock;
  /** After RotateSigningSecret the previous secret signs this much longer (default 24 h). */
  signingSecretOverlapMs?: number;
  /** Refuses webhook URLs naming a private address literally (the SSRF guard of deliveries). */
  addressGuard: AddressGuard;
  /** Checks a transform's syntax (nothing is run). */
  sandboxes: TransformSandboxes;
  /** Called after any change to a destination's routing (its rules, sources or state). */
  onRoutingChanged?: () => void;
  /** Looks at a warehouse when its settings are saved (by default: connects to it once, up to 5 s). */
  warehouseGuard?: WarehouseGuard;
  /** Called after a background job (a backfill) is stored. */
  onJobCreated?: () => void;
}

const updatablePaths = new Set([
  "name",
  "source_ids",
  "enabled",
  "webhooks",
  "shared_secret",
  "signing_secrets",
  "max_requests_per_second",
  "ordering",
  "postgres",
  "filter",
  "drop_fields",
  "transform",
]);

/** DestinationService: webhook destinations, validated as docs/api.md#destinations says. */
export function createDestinationService(options: DestinationServiceOptions): ServiceImpl<typeof DestinationService> {
  const { pool, clock } = options;
  const overlapMs = options.signingSecretOverlapMs ?? 24 * 3_600_000;
  const rules = createDestinationRules(options);
  const warehouseGuard = options.warehouseGuard ?? createWarehouseGuard(pool);
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
      const kind = kindOf(input);
      if (kind === "postgres") refuseWebhookSettings(input, req.generateSigningSecret);
      else if (input.postgres) throw invalidArgument("destination.postgres", "only a Postgres destination has warehouse settings");
      const postgres = kind === "postgres" ? validatePostgres(input.postgres) : null;
      if (postgres) await warehouseGuard(postgres);
      const webhooks =
        kind === "postgres"
          ? []
          : keepMaskedValues("destination.webhooks", validateWebhooks("destination.webhooks", input.webhooks, options.addressGuard), []);
      const sourceIds = validateSourceIds("destination.sourceIds", input.sourceIds);
      const secret = validateSecret("destination.sharedSecret", input.sharedSecret);
      const signingSecrets = validateSigningSecrets("destination.signingSecrets", input.signingSecrets);
      const generated = req.generateSigningSecret ? generateSigningSecret() : "";
      if (generated) {
        if (signingSecrets.length >= maxSigningSecrets) {
          throw invalidArgument("generateSigningSecret", `a destination has at most ${maxSigningSecrets} signing secrets`);
        }
        signingSecrets.push({ secret: generated, expiresAt: null });
      }
      const rate = validateMaxRequestsPerSecond("destination.maxRequestsPerSecond", input.maxRequestsPerSecond);
      const ordering = validateOrdering("destination.ordering", input.ordering);
      const filter = validateFilter("destination.filter", input.filter);
      const dropFields = validateDropFieldList("destination.dropFields", input.dropFields);
      const transform = await validateTransform("destination.transform", input.transform, options.sandboxes);
      const row = await withTransaction(pool, async (tx) => {
        await requireSources(tx, sourceIds);
        const now = clock.now();
        await insertDestination(tx, {
          id,
          name,
          enabled: input.enabled ?? true,
          kind,
          postgres,
          webhooks,
          sharedSecret: secret,
          signingSecrets,
          maxRequestsPerSecond: rate,
          ordering,
          filter,
          dropFields,
          transform,
          at: now,
        });
        await replaceDestinationSources(tx, id, sourceIds);
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
      const rows = await listDestinationRows(pool, { sourceId, after, limit: size + 1 });
      const page = rows.slice(0, size);
      const last = page[page.length - 1];
      return {
        destinations: page.map((row) => toProto(row, clock.now())),
        nextPageToken: rows.length > size && last ? encodeTimeCursor(last.cursor_at, last.id) : "",
      };
    },
    async updateDestination(req) {
      const input = req.destination;
      if (!input) throw invalidArgument("destination", "is required");
      const id = requireUuid("destination.id", input.id);
      const paths = maskPaths(req.updateMask?.paths ?? [], input);
      const rules = await validateRuleUpdate(input, paths, options.sandboxes);
      // Outside the transaction: the look at the warehouse may take seconds.
      if (paths.has("postgres")) await guardWarehouseUpdate(pool, id, input, warehouseGuard);
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
        const now = clock.now();
        const rotated = rotateSigningSecrets(current.signing_secrets, now, overlapMs);
        await updateSigningSecrets(tx, id, rotated.secrets, now);
        return { row: (await selectDestination(tx, id))!, secret: rotated.secret };
      });
      return { signingSecret: secret, destination: toProto(row, clock.now()) };
    },
    async deleteDestination(req) {
      const id = requireUuid("id", req.id);
      await withTransaction(pool, async (tx) => {
        const current = await selectDestination(tx, id, true);
        if (!current) throw notFound("destination", id);
        await cancelDestinationDeliveries(tx, id, clock.now());
        await deleteDestinationRow(tx, id);
        await deleteDestinationHealth(tx, id);
      });
      // Its sandboxes in this process go now; other processes free theirs when unused.
      options.sandboxes.forgetDestination(id);
      options.onRoutingChanged?.();
      return {};
    },
  };
}

/** New warehouse settings (another URL or schema) are looked at before they are saved. */
async function guardWarehouseUpdate(db: Queryable, id: string, input: Destination, guard: WarehouseGuard) {
  const current = await selectDestination(db, id);
  if (!current?.postgres) return;
  const next = validatePostgres(input.postgres, current.postgres);
  if (next.url !== current.postgres.url || next.schema !== current.postgres.schema) await guard(next);
}

/** Mask paths in proto (snake_case) form; an empty mask means "every field that is set". */
function maskPaths(paths: readonly string[], input: Destination): Set<string> {
  if (paths.length === 0) {
    const implied = new Set<string>();
    if (input.name !== "") implied.add("name");
    if (input.sourceIds.length > 0) implied.add("source_ids");
    if (input.enabled !== undefined) implied.add("enabled");
    if (input.webhooks.length > 0) implied.add("webhooks");
    if (input.sharedSecret !== "") implied.add("shared_secret");
    if (input.signingSecrets.length > 0) implied.add("signing_secrets");
    if (input.maxRequestsPerSecond !== undefined) implied.add("max_requests_per_second");
    if (input.ordering !== Ordering.UNSPECIFIED) implied.add("ordering");
    if (input.postgres) implied.add("postgres");
    if (input.filter !== undefined) implied.add("filter");
    if (input.dropFields.length > 0) implied.add("drop_fields");
    if (input.transform !== "") implied.add("transform");
    return implied;
  }
  for (const path of paths) {
    if (!updatablePaths.has(path)) {
      throw invalidArgument(
        "updateMask",
        `cannot update ${JSON.stringify(path)}; updatable: name, sourceIds, enabled, webhooks, sharedSecret, signingSecrets, maxRequestsPerSecond, ordering, postgres, filter, dropFields, transform`,
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
  if (input.kind !== DestinationKind.UNSPECIFIED && kindOf(input) !== current.kind) {
    throw invalidArgument("destination.kind", `a destination's kind cannot change (it is ${current.kind})`);
  }
  if (current.kind === "postgres") {
    const webhookPaths = ["webhooks", "shared_secret", "signing_secrets"].filter((p) => paths.has(p));
    if (webhookPaths.length > 0) refuseWebhookSettings(input, false);
  } else if (paths.has("postgres")) {
    throw invalidArgument("destination.postgres", "only a Postgres destination has warehouse settings");
  }
  const postgres = paths.has("postgres") && current.postgres ? validatePostgres(input.postgres, current.postgres) : current.postgres;
  const webhooks =
    paths.has("webhooks") && current.kind === "webhook"
      ? keepMaskedValues("destination.webhooks", validateWebhooks("destination.webhooks", input.webhooks, addressGuard), current.webhooks)
      : current.webhooks;
  const secret = paths.has("shared_secret") ? validateSecret("destination.sharedSecret", input.sharedSecret) : current.shared_secret;
  const enabled = paths.has("enabled") ? (input.enabled ?? false) : current.enabled;
  const signingSecrets = paths.has("signing_secrets")
    ? validateSigningSecrets("destination.signingSecrets", input.signingSecrets)
    : activeSigningSecrets(current.signing_secrets, now);
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
    postgres,
    webhooks,
    sharedSecret: secret,
    signingSecrets,
    maxRequestsPerSecond: rate,
    ordering,
    filter: rules.filter === undefined ? current.filter : rules.filter,
    dropFields: rules.dropFields ?? current.drop_fields,
    transform: rules.transform ?? current.transform,
    at: now,
  });
  // New webhooks get a probe at once rather than after an open circuit's cooldown.
  if (paths.has("webhooks") || paths.has("postgres")) await probeNow(tx, current.id, now);
  // Turning a destination on, new webhooks, or a changed rate limit or
  // ordering (the claim reads both) can make waiting deliveries due: wake the workers.
  const flowChanged = rate !== current.max_requests_per_second || ordering !== current.ordering;
  if ((enabled && (!current.enabled || flowChanged)) || paths.has("webhooks") || paths.has("postgres")) await wakeWorkers(tx);
}

/** The routing rules an update sets (undefined: unchanged), validated before the transaction. */
interface RuleUpdate {
  filter?: Record<string, unknown> | null;
  dropFields?: string[];
  transform?: string;
}

async function validateRuleUpdate(input: Destination, paths: Set<string>, sandboxes: TransformSandboxes): Promise<RuleUpdate> {
  const rules: RuleUpdate = {};
  if (paths.has("filter")) rules.filter = validateFilter("destination.filter", input.filter);
  if (paths.has("drop_fields")) rules.dropFields = validateDropFieldList("destination.dropFields", input.dropFields);
  if (paths.has("transform")) rules.transform = await validateTransform("destination.transform", input.transform, sandboxes);
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
  return create(DestinationSchema, {
    ...healthFields(row, now),
    hasSigningSecret: hasActiveSigningSecret(row.signing_secrets, now),
    id: row.id,
    name: row.name,
    sourceIds: row.source_ids,
    enabled: row.enabled,
    webhooks: maskWebhooks(row.webhooks),
    kind: kindToProto(row.kind),
    postgres: postgresToProto(row.postgres),
    hasSharedSecret: row.shared_secret !== null,
    maxRequestsPerSecond: row.max_requests_per_second,
    ordering: orderingToProto(row.ordering),
    filter: (row.filter ?? undefined) as JsonObject | undefined,
    dropFields: row.drop_fields,
    transform: row.transform,
    etag: etagOf(row),
    createTime: timestampFromDate(row.created_at),
    updateTime: timestampFromDate(row.updated_at),
  });
}
