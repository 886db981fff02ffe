import type { Command } from "commander";
import { DeliveryService, ExplainMessageResponseSchema } from "../../../gen/waypost/v1/delivery_pb.js";
import { DestinationService, TestDestinationResponseSchema } from "../../../gen/waypost/v1/destination_pb.js";
import { testedCallsText } from "./tested-calls.js";
import type { Wire } from "../context.js";
import { registerBackfillCommand } from "./backfills.js";
import { resolveDestinationRef } from "./named-refs.js";
import { registerMessagesFiltered } from "./messages-filtered.js";
import { collect, fateNames, fields, parseCount, table, time } from "../format.js";

/** `destinations test` and `destinations backfill`: a destination's rules over stored calls. */
export function registerDestinationRules(destinations: Command, wire: Wire): void {
  destinations
    .command("test")
    .description("run a destination's rules over recent calls of its sources, sending nothing")
    .argument("<destination>", "destination id or name")
    .option("--sample <n>", "how many recent calls (default 20, at most 500)")
    .option("--message <id>", "test this call instead (repeat for several)", collect)
    .option("--filter <json>", "try this filter instead of the destination's")
    .action(
      wire(async (ctx, ref: string, flags: { sample?: string; message?: string[]; filter?: string }) => {
        const id = await resolveDestinationRef(ctx, ref, "<destination>");
        const response = await ctx.admin(DestinationService).testDestination({
          destination: { id, ...(flags.filter !== undefined ? { filter: JSON.parse(flags.filter) } : {}) },
          sampleSize: flags.sample === undefined ? 0 : parseCount(flags.sample, "--sample"),
          messageIds: flags.message ?? [],
        });
        ctx.print(TestDestinationResponseSchema, response, () => testedCallsText(response.calls));
      }),
    );

  registerBackfillCommand(destinations, wire);
}

/** `messages explain`: what happened to one call at every destination. */
export function registerMessages(program: Command, wire: Wire): void {
  const messages = program.command("messages").description("look up stored calls");
  messages
    .command("explain")
    .description("what happened to a call at every destination, and why")
    .argument("<message-id>", "the call's messageId")
    .option("--source <id>", "the source, when several used the messageId")
    .action(
      wire(async (ctx, messageId: string, flags: { source?: string }) => {
        const response = await ctx.admin(DeliveryService).explainMessage({ messageId, sourceId: flags.source ?? "" });
        ctx.print(ExplainMessageResponseSchema, response, () => {
          const call = response.call!;
          const head = fields([
            ["message id", call.messageId],
            ["source", call.sourceId],
            ["type", call.type],
            ["event", call.event || "-"],
            ["user id", call.userId || "-"],
            ["received", time(call.receiveTime)],
          ]);
          const rows = response.destinations.map((d) => [
            d.destinationName,
            d.destinationId,
            fateNames[d.fate] + (d.reason ? ` (${d.reason})` : ""),
            d.deliveryId || "-",
            d.deliveryId ? String(d.attemptCount) : "-",
          ]);
          return `${head}\n${table(["DESTINATION", "ID", "FATE", "DELIVERY", "ATTEMPTS"], rows)}`;
        });
      }),
    );
  registerMessagesFiltered(messages, wire);
}
