import { DestinationKind } from "../../../../gen/waypost/v1/destination_pb.js";
import { defineKind, type KindSettings } from "../kind.js";
import { createLakeKind } from "./lake-delivery.js";
import { type LakeSettings, lakeDefaults, lakeSettingsView, validateLakeSettings } from "./lake-settings.js";

const settings: KindSettings<LakeSettings> = {
  fields: [{ path: "lake", name: "lake", describe: "lake settings", moves: true, given: (input) => input.lake !== undefined }],
  read(input, { paths, current, guard }) {
    if (current && !paths.has("lake")) return current;
    const given = input.lake;
    return validateLakeSettings(
      "destination.lake",
      {
        url: given?.url ?? "",
        endpoint: given?.endpoint,
        region: given?.region,
        accessKeyId: given?.accessKeyId,
        secretAccessKey: given?.secretAccessKey,
        format: given?.format,
        flushSeconds: given?.flushSeconds,
        maxFileMb: given?.maxFileMb,
        archive: given?.archive,
      },
      guard,
      current,
    );
  },
  toProto: (settings) => ({ lake: lakeSettingsView(settings) }),
  toRow: (settings) => ({ lake: settings }),
  // A row without settings (none is stored so) reads as an empty URL: writes fail naming it.
  fromRow: (row) => row.lake ?? { url: "", endpoint: "", accessKeyId: "", secretAccessKey: "", archive: false, ...lakeDefaults },
};

/**
 * Lakes: calls written as files (Parquet with zstd, or gzipped NDJSON) into
 * S3-compatible object storage or a local directory, in the warehouse
 * layout's tables partitioned by hour, or every call as stored into the
 * archive's `calls` table (docs/lakes.md). Always on the call log.
 */
export const lakeKind = defineKind({
  name: "lake",
  label: "Lake",
  proto: DestinationKind.LAKE,
  settings,
  callLogOnly: true,
  asStored: (settings) => settings.archive,
  createDelivery: ({ pool, clock, logger, guard }) => createLakeKind({ pool, clock, logger, guard }),
});
