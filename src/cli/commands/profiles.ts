import { create } from "@bufbuild/protobuf";
import type { Command } from "commander";
import {
  GetProfileResponseSchema,
  ListProfileEventsResponseSchema,
  ListProfileMergesResponseSchema,
  ProfileService,
  SearchProfilesResponseSchema,
} from "../../../gen/waypost/v1/profile_pb.js";
import type { CliContext, Wire } from "../context.js";
import { UsageError } from "../errors.js";
import { parseCount } from "../format.js";
import { listPages } from "./list-pages.js";
import {
  describeProfile,
  eventRows,
  mergeRows,
  parseSelector,
  parseTrait,
  profileRows,
  type Selector,
  type SelectorFlags,
} from "./profile-text.js";

/** The options that name one person, on each command that takes one. */
function withSelector(command: Command): Command {
  return command
    .option("--id <id>", "the profile's id (a merged profile's id gives the profile it merged into)")
    .option("--identifier <type:value>", "an identifier of theirs: user_id:ada, anonymous_id:…, or a type the server names (email:…)")
    .option("--user <userId>", "their userId (--identifier user_id:U)")
    .option("--anonymous <anonymousId>", "an anonymousId of theirs (--identifier anonymous_id:A)");
}

/** The id of the profile a selector names: as given, or looked up by its identifier (GetProfile). */
async function profileIdOf(ctx: CliContext, selector: Selector): Promise<string> {
  if ("profileId" in selector) return selector.profileId;
  const { profile } = await ctx.admin(ProfileService).getProfile(selector, { signal: ctx.signal });
  return profile!.id;
}

interface SearchFlags {
  trait?: string;
  prefix?: string;
  type?: string;
  limit: string;
}

/** `profiles get|events|search|merges`: the people identity resolution found (ProfileService; needs profiles:read). */
export function registerProfiles(program: Command, wire: Wire): void {
  const profiles = program
    .command("profiles")
    .description("people across every id they used, as identity resolution joined them: get, events, search, merges (needs profiles:read)");

  withSelector(profiles.command("get"))
    .description("a profile: its ids, identifiers, traits (with when and by which call each was set), calls per event, first and last seen")
    .action(
      wire(async (ctx, flags: SelectorFlags) => {
        const response = await ctx.admin(ProfileService).getProfile(parseSelector(flags), { signal: ctx.signal });
        ctx.print(GetProfileResponseSchema, response, () => describeProfile(response.profile!));
      }),
    );

  withSelector(profiles.command("events"))
    .description("a profile's calls across all its ids, newest first")
    .option("--limit <n>", "at most this many", "50")
    .action(
      wire(async (ctx, flags: SelectorFlags & { limit: string }) => {
        const limit = parseCount(flags.limit, "--limit");
        const selector = parseSelector(flags);
        const profileId = await profileIdOf(ctx, selector);
        const client = ctx.admin(ProfileService);
        const listed = await listPages(
          (pageToken, pageSize) => client.listProfileEvents({ profileId, pageSize, pageToken }, { signal: ctx.signal }),
          (page) => page.events,
          limit,
        );
        const all = create(ListProfileEventsResponseSchema, { events: listed.items, nextPageToken: listed.nextPageToken });
        ctx.print(ListProfileEventsResponseSchema, all, () => eventRows(all.events));
      }),
    );

  profiles
    .command("search")
    .description("profiles by a trait's value, or by an identifier's prefix")
    .option("--trait <key=value>", "a trait's exact value: plan=pro, seats=3, or JSON: 'plan=\"pro\"'")
    .option("--prefix <prefix>", "an identifier's value starts with this")
    .option("--type <type>", "with --prefix: only identifiers of this type (user_id, anonymous_id, email, …)")
    .option("--limit <n>", "at most this many (at most 100)", "20")
    .action(
      wire(async (ctx, flags: SearchFlags) => {
        if ((flags.trait === undefined) === (flags.prefix === undefined)) throw new UsageError("give --trait KEY=VALUE or --prefix P");
        if (flags.type !== undefined && flags.prefix === undefined) throw new UsageError("--type goes with --prefix");
        const pageSize = Math.min(parseCount(flags.limit, "--limit"), 100);
        const request =
          flags.trait !== undefined ? parseTrait(flags.trait) : { identifierPrefix: flags.prefix!, identifierType: flags.type ?? "" };
        const response = await ctx.admin(ProfileService).searchProfiles({ ...request, pageSize }, { signal: ctx.signal });
        ctx.print(SearchProfilesResponseSchema, response, () => profileRows(response.profiles));
      }),
    );

  withSelector(profiles.command("merges"))
    .description("a profile's history, newest first: made, merged, identifiers a rule left out (and why), deleted")
    .action(
      wire(async (ctx, flags: SelectorFlags) => {
        const profileId = await profileIdOf(ctx, parseSelector(flags));
        const response = await ctx.admin(ProfileService).listProfileMerges({ profileId }, { signal: ctx.signal });
        ctx.print(ListProfileMergesResponseSchema, response, () => mergeRows(response.merges));
      }),
    );
}
