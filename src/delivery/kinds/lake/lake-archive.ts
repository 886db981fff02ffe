import type { KindColumns } from "../../../db/queries/destinations.js";
import { type ArchiveReader, createArchiveReader } from "../../../lake/archive-reader.js";
import { createFileReader } from "../../../lake/file-reader.js";
import { parseLakeUrl } from "../../../lake/lake-url.js";
import { openLakeStore } from "../../../lake/object-store.js";
import type { AddressGuard } from "../../../outbound/address-guard.js";
import type { LakeSettings } from "./lake-settings.js";

/**
 * A stored destination's lake settings when it is a lake with archive on,
 * else undefined: what a replay may read from (docs/lakes.md#replay).
 */
export function archiveSettingsOfRow(row: { kind: string } & Pick<KindColumns, "lake">): LakeSettings | undefined {
  return row.kind === "lake" && row.lake?.archive ? row.lake : undefined;
}

/** A reader of an archive's `calls` files, through its store as its writes reach it (the endpoint held to the guard). */
export function openArchiveReader(settings: LakeSettings, guard: AddressGuard | undefined): ArchiveReader {
  return createArchiveReader({
    store: openLakeStore(settings, guard),
    reader: createFileReader(),
    prefix: parseLakeUrl(settings.url).prefix,
  });
}
