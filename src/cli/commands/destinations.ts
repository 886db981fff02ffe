import { create } from "@bufbuild/protobuf";
import type { Command } from "commander";
import {
  CreateDestinationResponseSchema,
  DeleteDestinationResponseSchema,
  DestinationService,
  GetDestinationResponseSchema,
  ListDestinationsResponseSchema,
  UpdateDestinationResponseSchema,
  type Destination,
} from "../../../gen/waypost/v1/destination_pb.js";
import type { CliContext } from "../context.js";
import { UsageError } from "../errors.js";
import { fields, table, time } from "../format.js";
import type { Wire } from "../program.js";
import { declareDestinationFlags, destinationFromFlags, type DestinationFlags } from "./destination-flags.js";

/** The columns of `destinations list`: a new column is one more entry. */
export const destinationColumns: Array<{ header: string; value(d: Destination): string }> = [
  { header: "ID", value: (d) => d.id },
  { header: "NAME", value: (d) => d.name },
  { header: "ENABLED", value: (d) => (d.enabled === false ? "no" : "yes") },
  { header: "SOURCES", value: (d) => String(d.sourceIds.length) },
  { header: "SECRET", value: (d) => (d.hasSharedSecret ? "yes" : "no") },
  { header: "URLS", value: (d) => d.webhooks.map((w) => w.url).join(" ") },
];

export function describeDestination(d: Destination): string {
  const lines = fields([
    ["id", d.id],
    ["name", d.name],
    ["enabled", d.enabled === false ? "no" : "yes"],
    ["sources", d.sourceIds.join(", ") || "-"],
    ["shared secret", d.hasSharedSecret ? "set" : "none"],
    ["created", time(d.createTime)],
    ["updated", time(d.updateTime)],
  ]);
  const webhooks = d.webhooks.map((w, i) => {
    const headers = Object.entries(w.headers).map(([k, v]) => `\n    ${k}: ${v}`);
    return `webhook ${i + 1}: ${w.url}${headers.join("")}`;
  });
  return lines + webhooks.join("\n") + "\n";
}

async function update(ctx: CliContext, id: string, flags: DestinationFlags): Promise<void> {
  const client = ctx.admin(DestinationService);
  // --header without --url keeps the current URLs: read them first.
  const current = flags.header !== undefined && flags.url === undefined ? (await client.getDestination({ id })).destination : undefined;
  const { destination, paths } = destinationFromFlags(flags, current);
  if (paths.length === 0) throw new UsageError("nothing to change: give at least one of the flags (see --help)");
  const response = await client.updateDestination({ destination: { ...destination, id }, updateMask: { paths } });
  ctx.print(UpdateDestinationResponseSchema, response, () => describeDestination(response.destination!));
}

export function registerDestinations(program: Command, wire: Wire): void {
  const destinations = program.command("destinations").description("manage webhook destinations");

  destinations
    .command("list")
    .description("list every destination")
    .action(
      wire(async (ctx) => {
        const client = ctx.admin(DestinationService);
        const all = create(ListDestinationsResponseSchema);
        let pageToken = "";
        do {
          const page = await client.listDestinations({ pageSize: 500, pageToken }, { signal: ctx.signal });
          all.destinations.push(...page.destinations);
          pageToken = page.nextPageToken;
        } while (pageToken);
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
    .argument("<id>", "destination id")
    .action(
      wire(async (ctx, id: string) => {
        const response = await ctx.admin(DestinationService).getDestination({ id });
        ctx.print(GetDestinationResponseSchema, response, () => describeDestination(response.destination!));
      }),
    );

  declareDestinationFlags(
    destinations.command("create").description("create a destination (--header applies to every --url)"),
    "create",
  ).action(
    wire(async (ctx, flags: DestinationFlags) => {
      const { destination } = destinationFromFlags(flags);
      const response = await ctx.admin(DestinationService).createDestination({ destination });
      ctx.print(CreateDestinationResponseSchema, response, () => describeDestination(response.destination!));
    }),
  );

  declareDestinationFlags(
    destinations
      .command("update")
      .description("change the settings given by flags; others stay as they are")
      .argument("<id>", "destination id"),
    "update",
  ).action(wire(async (ctx, id: string, flags: DestinationFlags) => update(ctx, id, flags)));

  destinations
    .command("enable")
    .description("enable a destination")
    .argument("<id>", "destination id")
    .action(wire(async (ctx, id: string) => update(ctx, id, { enabled: true })));

  destinations
    .command("disable")
    .description("disable a destination: its deliveries wait (and expire after the retry window)")
    .argument("<id>", "destination id")
    .action(wire(async (ctx, id: string) => update(ctx, id, { disabled: true })));

  destinations
    .command("delete")
    .description("delete a destination; its unfinished deliveries are cancelled")
    .argument("<id>", "destination id")
    .action(
      wire(async (ctx, id: string) => {
        const response = await ctx.admin(DestinationService).deleteDestination({ id });
        ctx.print(DeleteDestinationResponseSchema, response, () => `deleted destination ${id}`);
      }),
    );
}
