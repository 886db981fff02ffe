import { SourceService, type Source } from "../../../gen/waypost/v1/source_pb.js";
import type { CliContext } from "../context.js";
import { UsageError } from "../errors.js";

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Every source, page by page. */
export async function listAllSources(ctx: CliContext): Promise<Source[]> {
  const client = ctx.admin(SourceService);
  const sources: Source[] = [];
  let pageToken = "";
  do {
    const page = await client.listSources({ pageSize: 500, pageToken }, { signal: ctx.signal });
    sources.push(...page.sources);
    pageToken = page.nextPageToken;
  } while (pageToken);
  return sources;
}

/**
 * A SOURCE argument as an id: an id as given (the RPC says if it does not
 * exist), else the one source of that name. Several of one name is a usage
 * error listing them: reprocessing one of them at random would be worse.
 */
export async function resolveSourceRef(ctx: CliContext, ref: string, what = "<source>"): Promise<string> {
  if (uuid.test(ref)) return ref;
  const named = (await listAllSources(ctx)).filter((s) => s.name === ref);
  if (named.length === 1) return named[0]!.id;
  if (named.length === 0) {
    throw new UsageError(`${what}: no source has the id or name ${JSON.stringify(ref)} (waypost sources list shows them)`);
  }
  const matches = named.map((s) => `  ${s.id}  ${s.name}`).join("\n");
  throw new UsageError(`${what}: ${named.length} sources are named ${JSON.stringify(ref)}; give one's id:\n${matches}`);
}
