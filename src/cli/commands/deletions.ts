import type { Command } from "commander";
import {
  CreateDeletionRequestResponseSchema,
  DeletionService,
  DeletionStatus,
  GetDeletionRequestResponseSchema,
  type DeletionRequest,
} from "../../../gen/waypost/v1/deletion_pb.js";
import { collect, fields, time } from "../format.js";
import type { Wire } from "../context.js";

function describe(r: DeletionRequest): string {
  return fields([
    ["id", r.id],
    ["user", r.identifierType && r.identifierType !== "user_id" ? `${r.identifierType} ${r.userId}` : r.userId],
    ["sources", r.sourceIds.join(", ") || "-"],
    ["status", r.status === DeletionStatus.COMPLETED ? "completed" : "in progress"],
    ["messages deleted", String(r.messagesDeleted)],
    ["notifications", `${r.notificationsTotal} (delivered ${r.notificationsDelivered}, failed ${r.notificationsFailed})`],
    [
      "lakes",
      r.lakesTotal === 0n
        ? "-"
        : `${r.lakesTotal} (done ${r.lakesDone}, failed ${r.lakesFailed}; files scanned ${r.lakeFilesScanned}, rewritten ${r.lakeFilesRewritten}, deleted ${r.lakeFilesDeleted}; rows deleted ${r.lakeRowsDeleted})`,
    ],
    ["created", time(r.createTime)],
    ["completed", time(r.completeTime)],
  ]);
}

export function registerDeletions(program: Command, wire: Wire): void {
  const deletions = program.command("deletions").description("forget a user: delete their data and notify destinations");

  deletions
    .command("create")
    .description("delete a person's stored calls (every id of their profile) and send delete notifications")
    .requiredOption("--user <id>", "the userId to forget (or a value of --type)")
    .option("--type <type>", "the identifier type of --user: user_id (default), anonymous_id, or one WAYPOST_IDENTITY_RULES names")
    .option("--source <id>", "only this source (repeat for several; default: every source)", collect)
    .action(
      wire(async (ctx, flags: { user: string; type?: string; source?: string[] }) => {
        const response = await ctx
          .admin(DeletionService)
          .createDeletionRequest({ userId: flags.user, identifierType: flags.type ?? "", sourceIds: flags.source ?? [] });
        ctx.print(CreateDeletionRequestResponseSchema, response, () => describe(response.deletionRequest!));
      }),
    );

  deletions
    .command("get")
    .description("a deletion request and the progress of its notifications")
    .argument("<id>", "deletion request id")
    .action(
      wire(async (ctx, id: string) => {
        const response = await ctx.admin(DeletionService).getDeletionRequest({ id });
        ctx.print(GetDeletionRequestResponseSchema, response, () => describe(response.deletionRequest!));
      }),
    );
}
