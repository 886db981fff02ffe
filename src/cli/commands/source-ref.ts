import { SourceService, type Source } from "../../../gen/waypost/v1/source_pb.js";
import type { CliContext } from "../context.js";
import { listPages } from "./list-pages.js";
import { resolveNamedRef } from "./named-ref.js";

/** Every source, page by page. */
export async function listAllSources(ctx: CliContext): Promise<Source[]> {
  const client = ctx.admin(SourceService);
  const { items } = await listPages(
    (pageToken, pageSize) => client.listSources({ pageSize, pageToken }, { signal: ctx.signal }),
    (page) => page.sources,
  );
  return items;
}

/** A SOURCE argument as an id: an id as given, else the one source of that name (named-ref.ts). */
export function resolveSourceRef(ctx: CliContext, ref: string, what = "<source>"): Promise<string> {
  return resolveNamedRef(ref, what, { noun: "source", plural: "sources", list: () => listAllSources(ctx) });
}
