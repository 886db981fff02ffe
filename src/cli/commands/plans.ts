import { readFileSync, writeFileSync } from "node:fs";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Command } from "commander";
import {
  GetTrackingPlanResponseSchema,
  InferTrackingPlanResponseSchema,
  ListViolationsResponseSchema,
  PlanMode,
  SetTrackingPlanResponseSchema,
  TrackingPlanService,
  ViolationKind,
  type TrackingPlan,
} from "../../../gen/waypost/v1/tracking_plan_pb.js";
import { InvalidInputError } from "../../errors.js";
import { generatePlanModule } from "../../plans/codegen.js";
import { compilePlan } from "../../plans/compile-plan.js";
import { readPlanDocument, type PlanDocument } from "../../plans/plan-document.js";
import type { Wire } from "../context.js";
import { UsageError } from "../errors.js";
import { fields, parseTime, table, time } from "../format.js";

const modes: Record<string, PlanMode> = {
  off: PlanMode.OFF,
  observe: PlanMode.OBSERVE,
  omit: PlanMode.OMIT,
  block: PlanMode.BLOCK,
};

function modeText(mode: PlanMode): string {
  return (PlanMode[mode] ?? String(mode)).toLowerCase();
}

function kindText(kind: ViolationKind): string {
  return (ViolationKind[kind] ?? String(kind)).toLowerCase();
}

/**
 * A plan file: JSON, checked here as the server checks it, so CI fails
 * before anything is sent. Its text is sent as it is, so `plan get` gives
 * back the same bytes.
 */
function readPlanFile(file: string): { plan: PlanDocument; text: string } {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new UsageError(`${file}: ${(error as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${file}: not JSON (${(error as Error).message})`);
  }
  try {
    const plan = readPlanDocument(value);
    compilePlan(plan);
    return { plan, text };
  } catch (error) {
    if (error instanceof InvalidInputError) throw new UsageError(`${file}: ${error.message}`);
    throw error;
  }
}

function describePlan(plan: TrackingPlan): string {
  return fields([
    ["source", plan.sourceId],
    ["mode", modeText(plan.mode)],
    ["etag", plan.etag || "-"],
    ["updated", time(plan.updateTime)],
  ]);
}

export function registerPlans(program: Command, wire: Wire): void {
  const plan = program
    .command("plan")
    .description("tracking plans: apply one from a file, read it, its violations; infer one; generate typed calls");

  plan
    .command("apply")
    .description("set a source's tracking plan from a JSON file (the mode stays unless --mode is given)")
    .argument("<file>", "the plan, a JSON file")
    .requiredOption("--source <id>", "the source")
    .option("--mode <mode>", "off, observe, omit or block")
    .option("--etag <etag>", "refuse (aborted) if the plan changed since this etag was read")
    .action(
      wire(async (ctx, file: string, flags: { source: string; mode?: string; etag?: string }) => {
        const mode = flags.mode === undefined ? PlanMode.UNSPECIFIED : modes[flags.mode.toLowerCase()];
        if (mode === undefined) throw new UsageError(`--mode: "${flags.mode}" is not one of off, observe, omit, block`);
        const { text } = readPlanFile(file);
        const response = await ctx
          .admin(TrackingPlanService)
          .setTrackingPlan({ sourceId: flags.source, planJson: text, mode, etag: flags.etag ?? "" }, { signal: ctx.signal });
        ctx.print(SetTrackingPlanResponseSchema, response, () => describePlan(response.trackingPlan!));
      }),
    );

  plan
    .command("get")
    .description("print a source's tracking plan as it was applied, byte for byte (JSON on stdout; mode and etag on stderr)")
    .requiredOption("--source <id>", "the source")
    .action(
      wire(async (ctx, flags: { source: string }) => {
        const response = await ctx.admin(TrackingPlanService).getTrackingPlan({ sourceId: flags.source }, { signal: ctx.signal });
        const current = response.trackingPlan!;
        if (ctx.json) ctx.print(GetTrackingPlanResponseSchema, response, () => "");
        else if (current.planJson !== "") ctx.outExact(current.planJson);
        else ctx.out("(no plan)");
        if (!ctx.json) ctx.err(`mode ${modeText(current.mode)}, etag ${current.etag || "-"}`);
      }),
    );

  plan
    .command("violations")
    .description("what calls did against the plan: grouped by event, path and kind, most frequent first")
    .requiredOption("--source <id>", "the source")
    .option("--since <time>", "last seen at or after: ISO 8601, or back from now: 30m, 24h, 7d", "24h")
    .option("--limit <n>", "at most this many rows (default 100)")
    .action(
      wire(async (ctx, flags: { source: string; since: string; limit?: string }) => {
        const since = timestampFromDate(parseTime(flags.since, "--since"));
        const pageSize = flags.limit === undefined ? 0 : Number(flags.limit);
        const response = await ctx
          .admin(TrackingPlanService)
          .listViolations({ sourceId: flags.source, since, pageSize }, { signal: ctx.signal });
        ctx.print(ListViolationsResponseSchema, response, () =>
          response.violations.length === 0
            ? "no violations\n"
            : table(
                ["COUNT", "KIND", "CALL", "EVENT", "PATH", "PROBLEM", "EXAMPLE", "LAST SEEN"],
                response.violations.map((v) => [
                  String(v.count),
                  kindText(v.kind),
                  v.callType,
                  v.event || "-",
                  v.path,
                  v.message,
                  v.example || "-",
                  time(v.lastSeen),
                ]),
              ),
        );
      }),
    );

  plan
    .command("infer")
    .description("print a plan built from the source's stored calls (each event and property seen, its type, required when always present)")
    .requiredOption("--source <id>", "the source")
    .option("--since <time>", "calls received at or after: ISO 8601, or back from now: 24h, 7d", "7d")
    .action(
      wire(async (ctx, flags: { source: string; since: string }) => {
        const since = timestampFromDate(parseTime(flags.since, "--since"));
        const response = await ctx.admin(TrackingPlanService).inferTrackingPlan({ sourceId: flags.source, since }, { signal: ctx.signal });
        ctx.print(InferTrackingPlanResponseSchema, response, () => JSON.stringify(response.plan ?? {}, null, 2));
        if (!ctx.json) ctx.err(`built from ${response.callsRead} stored calls`);
      }),
    );

  plan
    .command("codegen")
    .description("write a TypeScript module of typed functions over @waypost/client, one per event of the plan")
    .argument("<file>", "the plan, a JSON file")
    .requiredOption("--out <file.ts>", "where to write the module")
    .action(
      wire(async (ctx, file: string, flags: { out: string }) => {
        const { plan: document } = readPlanFile(file);
        writeFileSync(flags.out, generatePlanModule(document));
        const events = Object.keys(document.events ?? {}).length;
        ctx.printJson({ out: flags.out, events }, () => `wrote ${flags.out} (${events} events)`);
      }),
    );
}
