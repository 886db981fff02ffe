import type { Command } from "commander";
import {
  CreateSourceResponseSchema,
  DeleteSourceResponseSchema,
  ListSourcesResponseSchema,
  HookVerifier,
  RotateHookTokenResponseSchema,
  RotateWriteKeyResponseSchema,
  SourceKind,
  SourceService,
} from "../../../gen/waypost/v1/source_pb.js";
import { create } from "@bufbuild/protobuf";
import { fields, table, time } from "../format.js";
import type { Wire } from "../context.js";
import { UsageError } from "../errors.js";
import { declareHookSourceFlags, inboundUrl, verifierName, webhookFromFlags, type HookSourceFlags } from "./hook-source-flags.js";
import { registerSourceUpdate } from "./source-update.js";
import { listAllSources, resolveSourceRef } from "./named-refs.js";

export function registerSources(program: Command, wire: Wire): void {
  const sources = program.command("sources").description("list, create, update, rotate keys of and delete sources");

  sources
    .command("list")
    .description("list every source")
    .action(
      wire(async (ctx) => {
        const all = create(ListSourcesResponseSchema, { sources: await listAllSources(ctx) });
        ctx.print(ListSourcesResponseSchema, all, () =>
          table(
            ["ID", "NAME", "KIND", "CREATED"],
            all.sources.map((s) => [s.id, s.name, s.kind === SourceKind.WEBHOOK ? "webhook" : "sdk", time(s.createTime)]),
          ),
        );
      }),
    );

  declareHookSourceFlags(
    sources
      .command("create")
      .description("create a source; its write key (and a webhook source's inbound URL) is shown once")
      .argument("[name]", "the source's name")
      .option("--name <name>", "the source's name (or give it as the argument)"),
  ).action(
    wire(async (ctx, positional: string | undefined, options: { name?: string } & HookSourceFlags) => {
      const name = positional ?? options.name;
      if (name === undefined) throw new UsageError("a name is required: waypost sources create NAME (or --name NAME)");
      if (positional !== undefined && options.name !== undefined) throw new UsageError("--name: the name is given twice");
      const webhook = webhookFromFlags(options);
      const response = await ctx.admin(SourceService).createSource({
        source: webhook ? { name, kind: SourceKind.WEBHOOK, webhook } : { name },
      });
      const source = response.source!;
      ctx.print(CreateSourceResponseSchema, response, () =>
        fields([
          ["id", source.id],
          ["name", source.name],
          ...(source.hookToken
            ? [
                ["kind", "webhook"] as const,
                ["verifier", verifierName(source.webhook?.verifier ?? HookVerifier.NONE)] as const,
                ["inbound url", `${inboundUrl(ctx.serverUrl, source.hookToken)}  (shown once: paste it into the sender now)`] as const,
              ]
            : [["write key", `${source.writeKey}  (shown once: keep it now)`] as const]),
        ]),
      );
    }),
  );

  registerSourceUpdate(sources, wire);

  sources
    .command("rotate-hook-token")
    .description("a new inbound URL for a webhook source, shown once; the old one stops working at once")
    .argument("<source>", "source id or name")
    .action(
      wire(async (ctx, ref: string) => {
        const id = await resolveSourceRef(ctx, ref);
        const response = await ctx.admin(SourceService).rotateHookToken({ id });
        const source = response.source!;
        ctx.print(RotateHookTokenResponseSchema, response, () =>
          fields([
            ["id", source.id],
            ["inbound url", `${inboundUrl(ctx.serverUrl, source.hookToken)}  (shown once: paste it into the sender now)`],
          ]),
        );
      }),
    );

  sources
    .command("rotate-key")
    .description("replace a source's write key; the old one stops working")
    .argument("<id>", "source id")
    .action(
      wire(async (ctx, id: string) => {
        const response = await ctx.admin(SourceService).rotateWriteKey({ id });
        ctx.print(RotateWriteKeyResponseSchema, response, () =>
          fields([
            ["id", response.source!.id],
            ["write key", `${response.source!.writeKey}  (shown once: keep it now)`],
          ]),
        );
      }),
    );

  sources
    .command("delete")
    .description("delete a source and its stored calls")
    .argument("<id>", "source id")
    .action(
      wire(async (ctx, id: string) => {
        const response = await ctx.admin(SourceService).deleteSource({ id });
        ctx.print(DeleteSourceResponseSchema, response, () => `deleted source ${id}`);
      }),
    );
}
