import type { Command } from "commander";
import {
  CreateSourceResponseSchema,
  DeleteSourceResponseSchema,
  ListSourcesResponseSchema,
  RotateWriteKeyResponseSchema,
  SourceService,
} from "../../../gen/waypost/v1/source_pb.js";
import { create } from "@bufbuild/protobuf";
import { fields, table, time } from "../format.js";
import type { Wire } from "../context.js";

export function registerSources(program: Command, wire: Wire): void {
  const sources = program.command("sources").description("list, create, rotate keys of and delete sources");

  sources
    .command("list")
    .description("list every source")
    .action(
      wire(async (ctx) => {
        const client = ctx.admin(SourceService);
        const all = create(ListSourcesResponseSchema);
        let pageToken = "";
        do {
          const page = await client.listSources({ pageSize: 500, pageToken }, { signal: ctx.signal });
          all.sources.push(...page.sources);
          pageToken = page.nextPageToken;
        } while (pageToken);
        ctx.print(ListSourcesResponseSchema, all, () =>
          table(
            ["ID", "NAME", "CREATED"],
            all.sources.map((s) => [s.id, s.name, time(s.createTime)]),
          ),
        );
      }),
    );

  sources
    .command("create")
    .description("create a source; its write key is shown once")
    .requiredOption("--name <name>", "the source's name")
    .action(
      wire(async (ctx, options: { name: string }) => {
        const response = await ctx.admin(SourceService).createSource({ source: { name: options.name } });
        const source = response.source!;
        ctx.print(CreateSourceResponseSchema, response, () =>
          fields([
            ["id", source.id],
            ["name", source.name],
            ["write key", `${source.writeKey}  (shown once: keep it now)`],
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
