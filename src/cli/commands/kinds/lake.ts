import { LakeFormat } from "../../../../gen/waypost/v1/destination_pb.js";
import { UsageError } from "../../errors.js";
import { settingsKind } from "./settings-kind.js";

const formats: Record<string, LakeFormat> = { parquet: LakeFormat.PARQUET, "ndjson-gz": LakeFormat.NDJSON_GZ };
const formatNames = new Map<LakeFormat, string>([
  [LakeFormat.PARQUET, "parquet"],
  [LakeFormat.NDJSON_GZ, "ndjson-gz"],
]);
const yesNo: Record<string, boolean> = { yes: true, true: true, no: false, false: false };

function parseFormat(text: string): LakeFormat {
  const format = formats[text.toLowerCase()];
  if (format === undefined) throw new UsageError(`--lake-format: "${text}" is not parquet or ndjson-gz`);
  return format;
}

function parseCount(flag: string): (text: string) => number {
  return (text) => {
    if (!/^\d+$/.test(text)) throw new UsageError(`${flag}: "${text}" is not a whole number`);
    return Number(text);
  };
}

function parseArchive(text: string): boolean {
  const archive = yesNo[text.toLowerCase()];
  if (archive === undefined) throw new UsageError(`--archive: "${text}" is not yes or no`);
  return archive;
}

/** A lake: where its files go, the store's keys (the secret masked when shown), format, flush and archive. */
export const lakeFlags = settingsKind({
  message: "lake",
  keep: "stored",
  address: {
    key: "url",
    flag: "--lake-url <url>",
    help: { create: "where files go: s3://bucket/prefix or file:///directory (--kind lake)", update: "a new lake URL" },
  },
  others: [
    { key: "endpoint", flag: "--lake-endpoint <url>", help: "an S3-compatible store's endpoint (MinIO, R2, Ceph): https://host:port" },
    { key: "region", flag: "--lake-region <region>", help: "the bucket's region (default us-east-1)" },
    { key: "accessKeyId", flag: "--lake-access-key-id <id>", help: "the store's access key id (none: the AWS credential chain)" },
    { key: "secretAccessKey", flag: "--lake-secret-access-key <secret>", help: "the store's secret access key" },
    { key: "format", flag: "--lake-format <parquet|ndjson-gz>", help: "the files' format (default parquet)", parse: parseFormat },
    {
      key: "flushSeconds",
      flag: "--flush-seconds <n>",
      help: "a file at least this often while calls arrive (default 60)",
      parse: parseCount("--flush-seconds"),
    },
    {
      key: "maxFileMb",
      flag: "--max-file-mb <n>",
      help: "a file once it holds this many MB (default 128)",
      parse: parseCount("--max-file-mb"),
    },
    {
      key: "archive",
      flag: "--archive <yes|no>",
      help: "every call as stored, before the rules, into the calls table",
      parse: parseArchive,
    },
  ],
  target: (lake) => (lake.endpoint === "" ? lake.url : `${lake.url} at ${lake.endpoint}`),
  details: (lake) => [
    ["url", lake.url],
    ["endpoint", lake.endpoint === "" ? "(AWS S3)" : lake.endpoint],
    ["region", lake.region],
    ["credentials", lake.hasSecretAccessKey ? `key ${lake.accessKeyId}` : "the AWS credential chain"],
    ["format", formatNames.get(lake.format) ?? "parquet"],
    ["flush", `every ${lake.flushSeconds} s or ${lake.maxFileMb} MB`],
    ["archive", lake.archive ? "yes: every call as stored, in calls" : "no"],
  ],
});
