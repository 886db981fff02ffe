import { create, fromJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import {
  AudienceKind,
  AudienceService,
  ListAudiencesResponseSchema,
  SyncAudienceResponseSchema,
  SyncComputedTraitResponseSchema,
  type SyncCounts,
} from "../../../gen/waypost/v1/audience_pb.js";
import { listPages } from "./list-pages.js";
import { UsageError } from "../errors.js";
import { fields, table, time } from "../format.js";
import type { Wire } from "../context.js";

function counts(c: SyncCounts | undefined): string {
  return fields([
    ["added", String(c?.added ?? 0n)],
    ["removed", String(c?.removed ?? 0n)],
    ["changed", String(c?.changed ?? 0n)],
    ["unchanged", String(c?.unchanged ?? 0n)],
    ["identify calls", String(c?.calls ?? 0n)],
  ]);
}

/**
 * The file of a sync: user ids one per line (an audience's members), a JSON
 * array of user ids, or a JSON object of user id to value (a computed trait).
 */
async function readSyncFile(file: string): Promise<{ userIds: string[] } | { values: Record<string, JsonValue> }> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new UsageError(`--file: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  const trimmed = text.trim();
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    let value: unknown;
    try {
      value = JSON.parse(trimmed);
    } catch (error) {
      throw new UsageError(`--file: ${file} is not valid JSON (${(error as Error).message})`);
    }
    if (Array.isArray(value)) {
      if (!value.every((v) => typeof v === "string")) throw new UsageError(`--file: a JSON array must hold user ids (strings)`);
      return { userIds: value as string[] };
    }
    return { values: value as Record<string, JsonValue> };
  }
  return {
    userIds: text
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l !== ""),
  };
}

export function registerAudiences(program: Command, wire: Wire): void {
  const audiences = program.command("audiences").description("list audiences and computed traits, and sync them from a file");

  audiences
    .command("list")
    .description("every audience and computed trait")
    .option("--source <id>", "only this source's")
    .action(
      wire(async (ctx, flags: { source?: string }) => {
        const client = ctx.admin(AudienceService);
        const listed = await listPages(
          (pageToken, pageSize) => client.listAudiences({ sourceId: flags.source ?? "", pageSize, pageToken }, { signal: ctx.signal }),
          (page) => page.audiences,
        );
        const all = create(ListAudiencesResponseSchema, { audiences: listed.items });
        ctx.print(ListAudiencesResponseSchema, all, () =>
          table(
            ["ID", "SOURCE", "NAME", "KEY", "KIND", "MEMBERS", "LAST SYNC"],
            all.audiences.map((a) => [
              a.id,
              a.sourceId,
              a.name,
              a.key,
              a.kind === AudienceKind.COMPUTED_TRAIT ? "computed trait" : "audience",
              String(a.memberCount),
              time(a.lastSyncTime),
            ]),
          ),
        );
      }),
    );

  audiences
    .command("sync")
    .description("replace an audience's members (or a computed trait's values) with a file's")
    .argument("<id>", "audience id")
    .requiredOption(
      "--file <file>",
      "user ids one per line, a JSON array of user ids, or a JSON object {userId: value} for a computed trait",
    )
    .action(
      wire(async (ctx, id: string, flags: { file: string }) => {
        const input = await readSyncFile(flags.file);
        const client = ctx.admin(AudienceService);
        if ("userIds" in input) {
          const response = await client.syncAudience({ audienceId: id, userIds: input.userIds });
          ctx.print(SyncAudienceResponseSchema, response, () => counts(response.counts));
        } else {
          const values = Object.fromEntries(Object.entries(input.values).map(([user, v]) => [user, fromJson(ValueSchema, v)]));
          const response = await client.syncComputedTrait({ audienceId: id, values });
          ctx.print(SyncComputedTraitResponseSchema, response, () => counts(response.counts));
        }
      }),
    );
}
