import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Option, type Command } from "commander";
import { TrackingService } from "../../../gen/waypost/v1/tracking_pb.js";
import { callTypes, type CallType, type TypeField, typeFields, unknownCallType } from "../../calls/call.js";
import type { CliContext, Wire } from "../context.js";
import { UsageError } from "../errors.js";
import { fields, parseJsonObject, parseTime } from "../format.js";
import type { JsonObject } from "@bufbuild/protobuf";

interface SendFlags {
  writeKey: string;
  user?: string;
  anonymousId?: string;
  messageId?: string;
  event?: string;
  name?: string;
  category?: string;
  groupId?: string;
  previousId?: string;
  properties?: string;
  traits?: string;
  context?: string;
  timestamp?: string;
}

/** The flags of the fields only some types carry (calls/call.ts says which). */
const specific: TypeField[] = ["event", "name", "category", "groupId", "previousId", "properties", "traits"];

const flagName = (key: string) => `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

async function send(ctx: CliContext, type: CallType, flags: SendFlags): Promise<void> {
  for (const key of specific) {
    if (flags[key] !== undefined && !typeFields[type].includes(key))
      throw new UsageError(`${flagName(key)} does not apply to ${type} calls`);
  }
  if (type === "alias" && flags.anonymousId) throw new UsageError("--anonymous-id does not apply to alias calls (use --previous-id)");
  const json = (key: "properties" | "traits" | "context") =>
    flags[key] === undefined ? undefined : (parseJsonObject(flags[key], flagName(key)) as JsonObject);
  const common = {
    messageId: flags.messageId ?? "",
    userId: flags.user ?? "",
    timestamp: flags.timestamp === undefined ? undefined : timestampFromDate(parseTime(flags.timestamp, "--timestamp")),
    context: json("context"),
  };
  const anonymousId = flags.anonymousId ?? "";
  const client = ctx.withToken(TrackingService, flags.writeKey);
  let response: { messageId: string };
  switch (type) {
    case "identify":
      response = await client.identify({ identify: { ...common, anonymousId, traits: json("traits") } });
      break;
    case "track":
      response = await client.track({ track: { ...common, anonymousId, event: flags.event ?? "", properties: json("properties") } });
      break;
    case "page":
      response = await client.page({
        page: { ...common, anonymousId, name: flags.name ?? "", category: flags.category ?? "", properties: json("properties") },
      });
      break;
    case "screen":
      response = await client.screen({ screen: { ...common, anonymousId, name: flags.name ?? "", properties: json("properties") } });
      break;
    case "group":
      response = await client.group({ group: { ...common, anonymousId, groupId: flags.groupId ?? "", traits: json("traits") } });
      break;
    case "alias":
      response = await client.alias({ alias: { ...common, previousId: flags.previousId ?? "" } });
      break;
    default:
      return unknownCallType(type);
  }
  ctx.printJson({ messageId: response.messageId }, () => fields([["message id", response.messageId]]));
}

export function registerSend(program: Command, wire: Wire): void {
  program
    .command("send")
    .description("send one call with a source's write key, for trying things out")
    .addArgument(program.createArgument("<type>", "the call's type").choices(callTypes))
    .requiredOption("--write-key <key>", "the source's write key")
    .option("--user <id>", "userId")
    .option("--anonymous-id <id>", "anonymousId")
    .option("--message-id <id>", "messageId (default: one is made up)")
    .option("--event <name>", "track: the event")
    .option("--name <name>", "page, screen: the name")
    .option("--category <category>", "page: the category")
    .option("--group-id <id>", "group: the group")
    .option("--previous-id <id>", "alias: the previous id")
    .option("--properties <json>", "track, page, screen: a JSON object")
    .option("--traits <json>", "identify, group: a JSON object")
    .option("--context <json>", "a JSON object")
    .addOption(new Option("--timestamp <time>", "when it happened: ISO 8601 (default: now)"))
    .action(wire(async (ctx, type: CallType, flags: SendFlags) => send(ctx, type, flags)));
}
