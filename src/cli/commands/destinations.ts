import { create } from "@bufbuild/protobuf";
import type { Command } from "commander";
import {
  CreateDestinationResponseSchema,
  DeleteDestinationResponseSchema,
  DestinationHealth,
  DestinationKind,
  DestinationService,
  GetDestinationResponseSchema,
  ListDestinationsResponseSchema,
  Ordering,
  RotateSigningSecretResponseSchema,
  UpdateDestinationResponseSchema,
  type Destination,
} from "../../../gen/waypost/v1/destination_pb.js";
import type { CliContext, Wire } from "../context.js";
import { UsageError } from "../errors.js";
import { fields, table, time } from "../format.js";
import type { DestinationFlags } from "./destination-flag-types.js";
import { declareDestinationFlags, destinationFromFlags, flagsNeedCurrent } from "./destination-flags.js";
import { listAllDestinations, resolveDestinationRef } from "./named-refs.js";
import { kindFlagsOf } from "./kinds/registry.js";
import { descriptorOfProto } from "../../delivery/kinds/descriptors.js";
import { registerDestinationRules } from "./routing.js";
import { enumWords } from "../../enum-words.js";

const healthNames = enumWords(DestinationHealth, { [DestinationHealth.UNSPECIFIED]: "-" });

export function healthText(d: Destination): string {
  return healthNames[d.health] ?? String(d.health);
}

/** The kind's name (unspecified reads as webhook, as the server treats it). */
export function kindText(d: Destination): string {
  return descriptorOfProto(d.kind).name;
}

/** The rate limit: "none" when absent or 0. */
export function rateLimitText(d: Destination): string {
  return d.maxRequestsPerSecond ? `${d.maxRequestsPerSecond}/s` : "none";
}

/** UNSPECIFIED reads as none, as the server treats it. */
export function orderingText(d: Destination): string {
  return d.ordering === Ordering.PER_USER ? "per-user" : "none";
}

/** The columns of `destinations list`: a new column is one more entry. */
export const destinationColumns: Array<{ header: string; value(d: Destination): string }> = [
  { header: "ID", value: (d) => d.id },
  { header: "NAME", value: (d) => d.name },
  { header: "ENABLED", value: (d) => (d.enabled === false ? "no" : "yes") },
  { header: "HEALTH", value: healthText },
  { header: "RATE", value: rateLimitText },
  { header: "ORDERING", value: orderingText },
  { header: "SOURCES", value: (d) => String(d.sourceIds.length) },
  { header: "SECRET", value: (d) => (d.hasSharedSecret ? "yes" : "no") },
  { header: "SIGNING", value: (d) => (d.hasSigningSecret ? "yes" : "no") },
  {
    header: "URLS",
    value: (d) => kindFlagsOf(d).target(d),
  },
];

export function describeDestination(d: Destination): string {
  const lines = fields([
    ["id", d.id],
    ["name", d.name],
    ["kind", kindText(d)],
    ...kindFlagsOf(d).details(d),
    ["enabled", d.enabled === false ? "no" : "yes"],
    ["health", healthText(d)],
    ["consecutive failures", String(d.consecutiveFailures)],
    ["last success", time(d.lastSuccessTime)],
    ["last failure", time(d.lastFailureTime)],
    ["last error", d.lastError || "-"],
    ...(d.nextProbeTime ? [["next probe", time(d.nextProbeTime)] as const] : []),
    ...(d.backoffUntilTime ? [["backing off until", time(d.backoffUntilTime)] as const] : []),
    ["rate limit", d.maxRequestsPerSecond ? `${d.maxRequestsPerSecond} requests/s` : "none"],
    ["ordering", orderingText(d)],
    ["sources", d.sourceIds.join(", ") || "-"],
    ["filter", d.filter ? JSON.stringify(d.filter) : "none"],
    ["dropped fields", d.dropFields.join(", ") || "none"],
    ["transform", d.transform ? `${d.transform.split("\n").length} lines` : "none"],
    ["consent categories", d.consentCategories.join(", ") || "none"],
    ["require consent", d.requireConsent ? "yes" : "no"],
    ["adds profileId", d.addProfileId ? "yes" : "no"],
    ["shared secret", d.hasSharedSecret ? "set" : "none"],
    ["signing secret", d.hasSigningSecret ? "set" : "none"],
    ["created", time(d.createTime)],
    ["updated", time(d.updateTime)],
  ]);
  const webhooks = d.webhooks.map((w, i) => {
    const headers = Object.entries(w.headers).map(([k, v]) => `\n    ${k}: ${v}`);
    return `webhook ${i + 1}: ${w.url}${headers.join("")}`;
  });
  return `${lines + webhooks.join("\n")}\n`;
}

/** A new signing secret, which the server never shows again. */
function secretOnce(secret: string): string {
  return `signing secret: ${secret}  (shown once: keep it now)\n`;
}

async function update(ctx: CliContext, id: string, flags: DestinationFlags): Promise<void> {
  const client = ctx.admin(DestinationService);
  // Some flags keep part of what is stored (--header alone keeps the URLs; --exchange alone the broker URL): read it first.
  const current = flagsNeedCurrent(flags) ? (await client.getDestination({ id })).destination : undefined;
  const { destination, paths } = destinationFromFlags(flags, current);
  if (paths.length === 0) throw new UsageError("nothing to change: give at least one of the flags (see --help)");
  const response = await client.updateDestination({ destination: { ...destination, id }, updateMask: { paths } });
  ctx.print(UpdateDestinationResponseSchema, response, () => describeDestination(response.destination!));
}

export function registerDestinations(program: Command, wire: Wire): void {
  const destinations = program.command("destinations").description("manage destinations (webhooks, Postgres warehouses)");

  destinations
    .command("list")
    .description("list every destination")
    .action(
      wire(async (ctx) => {
        const all = create(ListDestinationsResponseSchema, { destinations: await listAllDestinations(ctx) });
        ctx.print(ListDestinationsResponseSchema, all, () =>
          table(
            destinationColumns.map((c) => c.header),
            all.destinations.map((d) => destinationColumns.map((c) => c.value(d))),
          ),
        );
      }),
    );

  destinations
    .command("get")
    .description("show one destination")
    .argument("<destination>", "destination id or name")
    .action(
      wire(async (ctx, ref: string) => {
        const id = await resolveDestinationRef(ctx, ref, "<destination>");
        const response = await ctx.admin(DestinationService).getDestination({ id });
        ctx.print(GetDestinationResponseSchema, response, () => describeDestination(response.destination!));
      }),
    );

  declareDestinationFlags(destinations.command("create").description("create a destination (--header applies to every --url)"), "create")
    .option("--generate-signing-secret", "generate a Standard Webhooks signing secret (printed once)")
    .action(
      wire(async (ctx, flags: DestinationFlags) => {
        const { destination } = destinationFromFlags(flags);
        const missing = kindFlagsOf({ kind: destination.kind ?? DestinationKind.UNSPECIFIED }).missing(flags);
        if (missing) throw new UsageError(missing);
        const response = await ctx
          .admin(DestinationService)
          .createDestination({ destination, generateSigningSecret: flags.generateSigningSecret === true });
        ctx.print(
          CreateDestinationResponseSchema,
          response,
          () => describeDestination(response.destination!) + (response.signingSecret ? secretOnce(response.signingSecret) : ""),
        );
      }),
    );

  declareDestinationFlags(
    destinations
      .command("update")
      .description("change the settings given by flags; others stay as they are")
      .argument("<destination>", "destination id or name"),
    "update",
  ).action(
    wire(async (ctx, ref: string, flags: DestinationFlags) => update(ctx, await resolveDestinationRef(ctx, ref, "<destination>"), flags)),
  );

  destinations
    .command("enable")
    .description("enable a destination")
    .argument("<destination>", "destination id or name")
    .action(wire(async (ctx, ref: string) => update(ctx, await resolveDestinationRef(ctx, ref, "<destination>"), { enabled: true })));

  destinations
    .command("disable")
    .description("disable a destination: its deliveries wait (and expire after the retry window)")
    .argument("<destination>", "destination id or name")
    .action(wire(async (ctx, ref: string) => update(ctx, await resolveDestinationRef(ctx, ref, "<destination>"), { disabled: true })));

  destinations
    .command("rotate-signing-secret")
    .description("generate a new Standard Webhooks signing secret (printed once); the previous ones keep signing for an overlap")
    .argument("<destination>", "destination id or name")
    .action(
      wire(async (ctx, ref: string) => {
        const id = await resolveDestinationRef(ctx, ref, "<destination>");
        const response = await ctx.admin(DestinationService).rotateSigningSecret({ id });
        ctx.print(
          RotateSigningSecretResponseSchema,
          response,
          () => `id: ${response.destination?.id ?? id}\n${secretOnce(response.signingSecret)}`,
        );
      }),
    );

  registerDestinationRules(destinations, wire);

  destinations
    .command("delete")
    .description("delete a destination; its unfinished deliveries are cancelled")
    .argument("<destination>", "destination id or name")
    .action(
      wire(async (ctx, ref: string) => {
        const id = await resolveDestinationRef(ctx, ref, "<destination>");
        const response = await ctx.admin(DestinationService).deleteDestination({ id });
        ctx.print(DeleteDestinationResponseSchema, response, () => `deleted destination ${id}`);
      }),
    );
}
