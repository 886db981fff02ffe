import { LakeFormat } from "../../../../gen/waypost/v1/destination_pb.js";
import { type SettingField, SettingsFieldset } from "../views/settings-fieldset.js";
import type { KindForm } from "./kind-form.js";
import { Target } from "./target.js";

/** A lake destination's part of the form: where files go, the store's keys ("***" on edit when set), format, flush, archive. */
export type LakeDraft = {
  url: string;
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  format: string;
  flushSeconds: string;
  maxFileMb: string;
  archive: boolean;
};

const fields: ReadonlyArray<SettingField<LakeDraft>> = [
  {
    key: "url",
    field: "lake.url",
    label: "Lake URL",
    placeholder: "s3://bucket/prefix",
    hint: "s3://bucket/prefix, or file:///directory on Waypost's machine.",
  },
  {
    key: "endpoint",
    field: "lake.endpoint",
    label: "Endpoint",
    placeholder: "https://minio.internal:9000",
    hint: "For S3-compatible stores (MinIO, R2, Ceph, GCS); empty for AWS S3.",
  },
  { key: "region", field: "lake.region", label: "Region", placeholder: "us-east-1" },
  { key: "accessKeyId", field: "lake.accessKeyId", label: "Access key id", hint: "Empty with the secret: the AWS credential chain." },
  // Write-only: shown as *** once set, and *** sent back keeps it.
  { key: "secretAccessKey", field: "lake.secretAccessKey", label: "Secret access key", input: "secret" },
  {
    key: "format",
    field: "lake.format",
    label: "Format",
    input: "select",
    options: [
      [String(LakeFormat.PARQUET), "Parquet (zstd)"],
      [String(LakeFormat.NDJSON_GZ), "NDJSON, gzipped"],
    ],
  },
  { key: "flushSeconds", field: "lake.flushSeconds", label: "Flush every (seconds)", input: "numeric", placeholder: "60" },
  { key: "maxFileMb", field: "lake.maxFileMb", label: "Largest file (MB)", input: "numeric", placeholder: "128" },
  {
    key: "archive",
    field: "lake.archive",
    label: "Archive: every call as stored",
    input: "check",
    hint: "Into one table, calls, before filters, consent, dropped fields and the transform; replayable later.",
  },
];

const count = (text: string) => (/^\d+$/.test(text.trim()) ? Number(text.trim()) : 0);

export const lakeForm: KindForm<LakeDraft> = {
  draft: (destination) => ({
    url: destination?.lake?.url ?? "",
    endpoint: destination?.lake?.endpoint ?? "",
    region: destination?.lake?.region ?? "",
    accessKeyId: destination?.lake?.accessKeyId ?? "",
    secretAccessKey: destination?.lake?.secretAccessKey ?? "",
    format: String(destination?.lake?.format ?? LakeFormat.PARQUET),
    flushSeconds: destination?.lake ? String(destination.lake.flushSeconds) : "",
    maxFileMb: destination?.lake ? String(destination.lake.maxFileMb) : "",
    archive: destination?.lake?.archive ?? false,
  }),
  request: (draft) => ({
    fields: {
      lake: {
        url: draft.url.trim(),
        endpoint: draft.endpoint.trim(),
        region: draft.region.trim(),
        accessKeyId: draft.accessKeyId.trim(),
        secretAccessKey: draft.secretAccessKey,
        format: Number(draft.format) as LakeFormat,
        flushSeconds: count(draft.flushSeconds),
        maxFileMb: count(draft.maxFileMb),
        archive: draft.archive,
      },
    },
    paths: ["lake"],
  }),
  Fields: (props) => <SettingsFieldset legend="Lake" fields={fields} {...props} />,
  Where: ({ destination: { lake } }) => (
    <Target
      address={lake?.url}
      parts={[
        ["format", lake?.format === LakeFormat.NDJSON_GZ ? "ndjson.gz" : "parquet"],
        ...(lake?.endpoint ? [["endpoint", lake.endpoint] as const] : []),
        ...(lake?.archive ? [["archive", "every call as stored"] as const] : []),
      ]}
    />
  ),
  tell: (d) => (d.lake ? (d.lake.archive ? "archive" : d.lake.url) : ""),
  retry: { now: "Writes it to the lake", again: "Writes it to the lake again now" },
  requestHeaders: false,
  discards: true,
};
